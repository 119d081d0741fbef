package med

// Contradictions is the counter of the CLOSED results taken in against our
// recorded close, by whether the report was open or ended.
var Contradictions = contradictionsTotal
