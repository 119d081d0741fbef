package pix_test

import (
	"regexp"
	"testing"

	"github.com/pixbank/pix/internal/pix"
)

// The checks by hand are the patterns they replaced.
var (
	endToEndIDPattern = regexp.MustCompile(`^E[A-Za-z0-9]{31}$`)
	ispbPattern       = regexp.MustCompile(`^[0-9]{8}$`)
)

func FuzzValidIDsMatchTheirPatterns(f *testing.F) {
	for _, s := range []string{"E1234567820261129120000000000001", "E1234567820261129120000000000001\n", "e1234567820261129120000000000001",
		"E123456782026112912000000000000", "E12345678202611291200000000000é", "12345678", "1234567", "1234567a", "", "E"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := pix.ValidEndToEndID(s), endToEndIDPattern.MatchString(s); got != want {
			t.Fatalf("ValidEndToEndID(%q) = %v, the pattern says %v", s, got, want)
		}
		if got, want := pix.ValidISPB(s), ispbPattern.MatchString(s); got != want {
			t.Fatalf("ValidISPB(%q) = %v, the pattern says %v", s, got, want)
		}
	})
}
