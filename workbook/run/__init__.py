"""One run, start to end: prepared, launched, judged, rendered and indexed.

    steps      the steps of a run, the notebook's cells call them (prepare, launch, judge, finish)
    driver     a run driven by its notebook under papermill (``workbook run``, suites, sweeps)
    notebook   papermill and nbconvert: executing a notebook and redacting what it printed
"""
