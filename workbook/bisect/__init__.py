"""bisect: from a red night to the verl commit that caused it (``workbook bisect``).

    repository  verl's git history: the first-parent commits between two nights, worktrees
    bad_night   the night that counts as bad, from the ledger or a run directory
    decision    one step's verdict -> good, bad or skip; the next commit to test
    state       bisect.json: the range, the steps done, the result
    plan        everything checked before the first step runs
    search      the steps themselves, each a run through the batch engine
    page        bisect.html
"""
