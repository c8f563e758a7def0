"""Group schedule: slicing, software pipeline, buffer lifetimes, SPM allocation, estimate.

See :mod:`tx8lab.core.schedule.tasks` for the data the stages hand each other.
"""
