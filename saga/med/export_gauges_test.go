package med

// SignatureRefusals is the counter of the DICT's refusals of our
// signature; CountSignatureRefusals wraps a DICT as the saga's Deps do.
var SignatureRefusals = dictSignatureRefusedTotal

func CountSignatureRefusals(d DICT) DICT { return signatureCounted{d} }

// QuarantinedItems and ListFailures are the lister's counters of the items
// quarantined and the lists failed for good.
var (
	QuarantinedItems = quarantinedTotal
	ListFailures     = listFailedTotal
)

// EndedTotal is the counter of the reports ended, by cause.
var EndedTotal = endedTotal
