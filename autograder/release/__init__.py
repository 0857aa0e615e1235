"""What students receive: the released notebooks, the homework bundle with its recorded worked examples, and the example class."""
