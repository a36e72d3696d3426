"""Calibration: smoothed confusion matrices and priors from labelled reports, threshold
fitting by minimising the costed objective (eq. 1) on a calibration split, calibration
sets (synthetic, from a stored run, or an uploaded CSV) and the CSV import."""
