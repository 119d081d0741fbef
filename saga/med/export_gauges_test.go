package med

// SignatureRefusals is the counter of the DICT's refusals of our
// signature; CountSignatureRefusals wraps a DICT as the saga's Deps do.
var SignatureRefusals = dictSignatureRefusedTotal

func CountSignatureRefusals(d DICT) DICT { return signatureCounted{d} }

// QuarantinedItems, ListFailures, ListThrottled and BucketReadFailures are
// the lister's counters of the items quarantined, the lists failed for
// good, the pages held back for their bucket and the bucket reads failed;
// BucketTokens its gauge of the buckets read.
var (
	QuarantinedItems   = quarantinedTotal
	ListFailures       = listFailedTotal
	ListThrottled      = listThrottledTotal
	BucketReadFailures = bucketReadFailedTotal
	BucketTokens       = bucketTokens
)

// EndedTotal is the counter of the reports ended, by cause.
var EndedTotal = endedTotal
