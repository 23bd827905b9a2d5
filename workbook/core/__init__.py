"""The leaf layer: every path and name of the project and the run tree, and what guards writes.

    project        where params/, notebooks/ and the runs root are, whoever asks
    layout         the run directory (RunDir) and every file and folder name of the run tree
    redaction      secrets never leave a run: one guard on every write, inside structures
    atomic         writes readers never see half of
    serialization  YAML in (bounded, duplicate keys refused) and out
    quoting        short, bounded renderings of values for error messages
    textfile       reading an input file: regular, bounded, UTF-8 or named

Nothing here imports another layer of the workbook (``workbook.errors`` aside).
"""
