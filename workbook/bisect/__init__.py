"""``workbook bisect``: from a red night to the verl commit that caused it.

Between the last green night and a red one (``bad_night``) lie the verl commits ``good..bad``
along the first-parent line (``repository``), checked with everything else asked before anything
starts (``plan``). Each step (``search``) checks one out into a git worktree and runs the scenario
once with ``verl.path`` set to it, through :mod:`workbook.batch.engine`; its verdict becomes good,
bad or skip and the next commit is chosen (``decision``) until the first bad commit is known or
only skipped ones are left. ``state`` is bisect.json, ``page`` bisect.html.
"""
