"""The clinical-utility evaluation of a Small Agent Group (seed 004, section 3 and App. B)."""
