package pspsimtests_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pixbank/pix/internal/tooling/pspsim"
)

// BenchmarkListPixPage is one page of 2 of GET /pix over a window of n
// PIX received (the catch-up's fault case lists 3,000 so, page after
// page), through the handler, without a network.
func BenchmarkListPixPage(b *testing.B) {
	for _, n := range []int{3_000, 30_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			sim := pspsim.New(pspsim.Options{})
			h := sim.Handler()
			at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
			for i := range n {
				body := receivedAt(i, at.Add(time.Duration(i)*time.Millisecond), "")
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/sim/pix", strings.NewReader(body)))
				if w.Code != http.StatusAccepted {
					b.Fatalf("POST /sim/pix: %d %s", w.Code, w.Body)
				}
			}
			pages := n / 2
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, fmt.Sprintf("/pix?%s&paginacao.itensPorPagina=2&paginacao.paginaAtual=%d", window, i%pages), nil))
				if w.Code != http.StatusOK {
					b.Fatalf("GET /pix: %d %s", w.Code, w.Body)
				}
			}
		})
	}
}
