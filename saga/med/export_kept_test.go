package med

// KeptClosed is the counter of the kept requests' closes by outcome.
var KeptClosed = keptClosedTotal
