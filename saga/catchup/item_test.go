package catchup_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/saga/catchup"
)

// An item of GET /pix that is not an object (null, a number: the client
// passes it on raw) is counted and skipped as any item the decoder
// refuses: it holds back neither the page's other PIX nor the window (the
// client used to fail the whole page as unintelligible, for ever).
func TestCatchUpSkipsAnItemThatIsNoObject(t *testing.T) {
	r := newCatchUpRig(t)
	at := r.now.Add(-time.Minute)
	good := catchUpID(1)
	r.psp.add(
		listedPix{raw: `null`, at: at},
		listedPix{id: good, key: "catchup@example.com", cents: 200, at: at.Add(time.Second)},
		listedPix{raw: `5`, at: at.Add(2 * time.Second)},
	)
	w := r.begin()
	counts, err := r.list(w)
	require.NoError(t, err)
	require.Equal(t, catchup.Counts{Pages: 2, Listed: 3, New: 1, Refused: 2}, counts)
	_, cents, _ := r.row(good)
	require.EqualValues(t, 200, cents, "the page's other PIX is stored")
	require.EqualValues(t, 2, r.counter("pix_psp_catchup_rejected_total", "reason", catchup.ReasonInvalid))
	require.True(t, r.advance(w), "nothing stalls the window")
}
