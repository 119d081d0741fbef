package cli

// ProbeWithin is Probe with a timeout of the test's choosing.
var ProbeWithin = probe
