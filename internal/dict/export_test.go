package dict

import "maps"

// What the tests of package dict_test need of the package's insides: they
// are an external test package because they serve the DICT simulator
// (internal/tooling/dictsim), which imports this package.

// DeclaredProblems are the declared problems, by type in full.
func DeclaredProblems() map[string]*Problem { return maps.Clone(problems) }

// SignedAcknowledge is the body c signs and sends to acknowledge the
// report id.
func SignedAcknowledge(c *HTTPClient, id string) ([]byte, error) {
	return signedXML(c.sign, acknowledgeRequest{InfractionReportID: id, Participant: c.participant})
}
