"""Many runs: a suite (a parsed file of scenarios, one night) and a sweep (a grid of settings).

    engine     the one engine both run on: validation, running in lanes, resume, signals
    records    the record of each item, the batch's JSON file (suite.json, sweep.json)
    lanes      local Ray clusters shared between consecutive items
    orphans    what crashed workbook runs left running, cleared before each item
    junit      a batch's JUnit file from each run's recorded verdict
    suite      a suite file: its entries
    sweep      a grid: its points, rollout replay, the comparison page
"""
