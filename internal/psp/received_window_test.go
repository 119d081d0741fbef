package psp_test

// GET /pix's answer is taken for the page asked for only when it is: of
// the window asked for, and readable by the catch-up however a PSP words
// an empty window or an odd item (found by an attack review of issue 27).

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/psp"
)

// listServer answers GET /pix with parametros.inicio and fim as window
// says of the query's, and the rest of the answer as given.
func listServer(t *testing.T, window func(inicio, fim string) (string, string), paginacao, items string) *psp.HTTPClient {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inicio, fim := window(r.URL.Query().Get("inicio"), r.URL.Query().Get("fim"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"parametros":{"inicio":%q,"fim":%q,"paginacao":%s},"pix":%s}`, inicio, fim, paginacao, items)
	}))
	t.Cleanup(srv.Close)
	return psp.NewHTTPClient(srv.URL, time.Second)
}

// echo answers the window asked for.
func echo(inicio, fim string) (string, string) { return inicio, fim }

func lastHour() psp.ReceivedQuery {
	now := time.Now().UTC()
	return psp.ReceivedQuery{Start: now.Add(-time.Hour), End: now, Page: 0, PerPage: 1000}
}

// A PSP answering another window than the one asked for (a caching proxy,
// a PSP's bug) is not taken for the window asked: the catch-up would
// advance its covered window over PIX it never listed.
func TestListReceivedOfAnotherWindowIsRefused(t *testing.T) {
	const page = `{"paginaAtual":0,"itensPorPagina":100,"quantidadeDePaginas":1,"quantidadeTotalDeItens":0}`
	for name, window := range map[string]func(string, string) (string, string){
		"2001": func(string, string) (string, string) { return "2001-01-01T00:00:00Z", "2001-01-01T00:00:01Z" },
		"ends earlier": func(inicio, _ string) (string, string) {
			return inicio, time.Now().UTC().Add(-30 * time.Minute).Format(time.RFC3339)
		},
		"starts later": func(_, fim string) (string, string) {
			return time.Now().UTC().Add(-30 * time.Minute).Format(time.RFC3339), fim
		},
		"empty":          func(string, string) (string, string) { return "", "" },
		"not date-times": func(string, string) (string, string) { return "x", "y" },
	} {
		t.Run(name, func(t *testing.T) {
			_, err := listServer(t, window, page, `[]`).ListReceived(context.Background(), lastHour())
			require.Error(t, err, "an answer about another window taken for the last hour's")
			require.Equal(t, psp.AnswerTransient, psp.Classify(err), "unintelligible: listed again, nothing advanced")
		})
	}
	t.Run("the window cut to the second, or a wider one: taken", func(t *testing.T) {
		toSecond := func(inicio, fim string) (string, string) {
			i, _ := time.Parse(time.RFC3339Nano, inicio)
			f, _ := time.Parse(time.RFC3339Nano, fim)
			return i.Truncate(time.Second).Format(time.RFC3339), f.Truncate(time.Second).In(time.FixedZone("BRT", -3*3600)).Format(time.RFC3339)
		}
		q := lastHour()
		q.Start, q.End = q.Start.Add(123*time.Millisecond), q.End.Add(456*time.Millisecond)
		_, err := listServer(t, toSecond, page, `[]`).ListReceived(context.Background(), q)
		require.NoError(t, err)
		wider := func(string, string) (string, string) { return "2001-01-01T00:00:00Z", "2101-01-01T00:00:00Z" }
		_, err = listServer(t, wider, page, `[]`).ListReceived(context.Background(), lastHour())
		require.NoError(t, err)
	})
}

// quantidadeDePaginas 0 with no items (what several PSPs answer for an
// empty window, although the spec says at least 1) is one empty page, not
// an unintelligible answer: the catch-up of a quiet window used to fail and
// retry, its covered window stalled and its age alert fired.
func TestListReceivedZeroPagesIsOneEmptyPage(t *testing.T) {
	c := listServer(t, echo, `{"paginaAtual":0,"itensPorPagina":1000,"quantidadeDePaginas":0,"quantidadeTotalDeItens":0}`, `[]`)
	page, err := c.ListReceived(context.Background(), lastHour())
	require.NoError(t, err)
	require.Equal(t, 1, page.Pages)
	require.Empty(t, page.Items)
}

// An item that is not an object (null) is passed on raw, for the catch-up
// to count and skip as it does an object its decoder refuses: it used to
// fail the whole page as unintelligible (transient), holding back the
// window, and every later PIX only the catch-up would find, for ever.
func TestListReceivedPassesOnAnItemThatIsNoObject(t *testing.T) {
	c := listServer(t, echo, `{"paginaAtual":0,"itensPorPagina":1000,"quantidadeDePaginas":1,"quantidadeTotalDeItens":2}`, `[{"endToEndId":"E1"},null]`)
	page, err := c.ListReceived(context.Background(), lastHour())
	require.NoError(t, err)
	require.Equal(t, []json.RawMessage{json.RawMessage(`{"endToEndId":"E1"}`), json.RawMessage(`null`)}, page.Items)
}
