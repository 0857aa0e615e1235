"""From what students hand in (LMS downloads, clones of the bundle) to SUBMISSIONS/<student>/<assignment>/<notebook>.ipynb."""
