"""align: precision alignment of run B against reference run A (``workbook align``).

    compute  per-metric errors against thresholds, throughput, the aligned/not aligned judgement
    runs     two run directories -> an Alignment, its record (alignment.json)
    plot     the aligned curves
    junit    an alignment as a JUnit suite

The page's report cells stay in :mod:`workbook.report.alignment`: the report renderer calls them.
"""
