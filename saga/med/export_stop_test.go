package med

// DICTStopped is the counter of the steps stopped at the DICT.
var DICTStopped = dictStoppedTotal

// QuarantineClearSQL is the clear's statements (quarantine.sql Clear and
// Wake), for a test that steps through a clear's transaction by hand.
func QuarantineClearSQL() (clear, wake string) { return quarantineSQL.Clear, quarantineSQL.Wake }

// ReturnsRefused is the counter of the returns refused for good, by
// refusal (PixMEDReturnRefused's).
var ReturnsRefused = returnsRefusedTotal
