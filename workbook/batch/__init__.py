"""Many runs: a suite (a parsed file of scenarios, one night) and a sweep (a grid of settings)."""
