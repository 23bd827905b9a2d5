"""verl's Ascend nightly and the scenarios that reproduce it: which job runs which script
(:mod:`~workbook.nightly.workflow`), what each script hands ``python3``
(:mod:`~workbook.nightly.standin`), whether a scenario still carries exactly that
(:mod:`~workbook.nightly.fidelity`), the recipe's baselines (:mod:`~workbook.nightly.recipe`)
and the job-by-job report of what moved (:mod:`~workbook.nightly.sync`).
"""
