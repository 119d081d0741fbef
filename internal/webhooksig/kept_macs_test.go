package webhooksig

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"
)

// The kept HMAC states under concurrency (run with -race): each
// request's answer is its own secret's PSP, never another request's or
// another PSP's, and a signature by one key never verifies under another.
func TestKeptMACsUnderConcurrency(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	keyA, keyB := []byte("key-of-psp-a-0123456789abcdef"), []byte("key-of-psp-b-0123456789abcdef")
	v := NewVerifier([]Secret{{PSP: "a", Key: keyA}, {PSP: "b", Key: keyB}}, 0, func() time.Time { return now })
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				key, want := keyA, "a"
				if (g+i)%2 == 1 {
					key, want = keyB, "b"
				}
				body := []byte(fmt.Sprintf(`{"g":%d,"i":%d}`, g, i))
				id := "msg_" + strconv.Itoa(g*1000+i)
				h := http.Header{}
				h.Set("webhook-id", id)
				h.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
				h.Set("webhook-signature", Sign(key, id, now, body))
				psp, err := v.Verify(h, body)
				if err != nil || psp != want {
					errs <- fmt.Errorf("g%d i%d: psp %q err %v, want %q", g, i, psp, err, want)
					return
				}
				// The same signature over another body, id or timestamp fails.
				if _, err := v.Verify(h, append(body, ' ')); err == nil {
					errs <- fmt.Errorf("g%d i%d: a changed body verified", g, i)
					return
				}
				h.Set("webhook-id", id+"x")
				if _, err := v.Verify(h, body); err == nil {
					errs <- fmt.Errorf("g%d i%d: a changed id verified", g, i)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
