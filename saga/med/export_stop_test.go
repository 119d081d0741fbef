package med

// DICTStopped is the counter of the steps stopped at the DICT.
var DICTStopped = dictStoppedTotal
