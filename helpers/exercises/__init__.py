"""The course's graded exercises, one module each: ``helpers/exercises/<name>.py`` declares
``EXERCISE`` (its reference, contract, cases, named mistakes and hints). What an exercise is,
and the list of them by notebook, is the framework's: :mod:`helpers.course`
(docs/authoring.md). The ``_``-prefixed modules here are what several exercise modules
share: mistakes' implementations (``_variants``, ``_llama_variants``) and input builders
(``_bert_inputs``, ``_bpe_inputs``)."""
