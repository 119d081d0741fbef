package med

// SignatureRefusals is the counter of the DICT's refusals of our
// signature; CountSignatureRefusals wraps a DICT as the saga's Deps do.
var SignatureRefusals = dictSignatureRefusedTotal

func CountSignatureRefusals(d DICT) DICT { return signatureCounted{d} }
