package dictsim

import (
	"cmp"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/beevik/etree"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/internal/dict/dictspec"
)

// held is what the simulator holds, reads and lists the same way: an
// infraction report or a refund request.
type held interface {
	// key is its id and LastModified: the lists' order.
	key() (string, time.Time)
	// isParty reports whether ispb is one of its two participants.
	isParty(ispb string) bool
	// element writes it as the specification's element, without its free
	// texts unless details.
	element(parent *etree.Element, details bool)
}

// heldOne is m's item id, as value copies it out, under s.mu. (m is one
// of s's maps, made once by New: only its content needs the lock.)
func heldOne[T held, V any](s *Simulator, m map[string]T, id string, value func(T) V) (V, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	it, ok := m[id]
	if !ok {
		var none V
		return none, false
	}
	return value(it), true
}

// heldAll are m's items by LastModified, as value copies them out, under
// s.mu.
func heldAll[T held, V any](s *Simulator, m map[string]T, value func(T) V) []V {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]V, 0, len(m))
	for _, it := range byLastModified(m) {
		out = append(out, value(it))
	}
	return out
}

// partyOf is the item of items named by the request's path parameter
// param, when the request's participant is a party of it: one of others'
// looks like none (404 NotFound, "no such " + what).
func partyOf[T held](items map[string]T, x *Exchange, param, what string) (T, *Answer) {
	it, ok := items[x.params[param]]
	if !ok || !it.isParty(x.Participant) {
		var none T
		a := problem(http.StatusNotFound, dict.ErrNotFound, "no such "+what)
		return none, &a
	}
	return it, nil
}

// itemAnswer is the answer name about it, with its free texts.
func itemAnswer(name string, it held) Answer {
	root := answerRoot(name)
	it.element(root, true)
	return Answer{Status: http.StatusOK, Body: root}
}

// listAnswer is the list answer name: the page of list the query's Limit
// holds, wrapped in wrapper (left out when the page is empty), with
// HasMoreElements, and the free texts only with IncludeDetails.
func listAnswer[T held](name, wrapper string, list []T, q url.Values) Answer {
	page, more := paged(list, q)
	root := answerRoot(name)
	root.CreateElement("HasMoreElements").SetText(strconv.FormatBool(more))
	if len(page) > 0 {
		wrap := root.CreateElement(wrapper)
		details := q.Get("IncludeDetails") == "true"
		for _, it := range page {
			it.element(wrap, details)
		}
	}
	return Answer{Status: http.StatusOK, Body: root}
}

// byLastModified are m's values by LastModified, then id: the lists'
// order, made stable for equal instants.
func byLastModified[T held](m map[string]T) []T {
	out := make([]T, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b T) int {
		ia, ta := a.key()
		ib, tb := b.key()
		return cmp.Or(ta.Compare(tb), cmp.Compare(ia, ib))
	})
	return out
}

// hasStatus applies a list's Status filter (none: every status).
func hasStatus(q url.Values, status string) bool {
	return len(q["Status"]) == 0 || slices.Contains(q["Status"], status)
}

// listed applies a list's ModifiedAfter and ModifiedBefore (both
// included) and the lists' lag (Options.ListLag) to mod. A date that is
// not RFC 3339's never gets here: admit refused it (400 BadRequest).
func (s *Simulator) listed(mod time.Time, q url.Values, now time.Time) bool {
	if s.listLag > 0 && mod.After(now.Add(-s.listLag)) {
		return false
	}
	if a := q.Get("ModifiedAfter"); a != "" {
		if t, err := dictspec.ParseDateTime(a); err == nil && mod.Before(t) {
			return false
		}
	}
	if b := q.Get("ModifiedBefore"); b != "" {
		if t, err := dictspec.ParseDateTime(b); err == nil && mod.After(t) {
			return false
		}
	}
	return true
}

// paged cuts list to the query's Limit (dict.DefaultLimit without one),
// and says whether more follow.
func paged[T any](list []T, q url.Values) ([]T, bool) {
	limit := dict.DefaultLimit
	if v, err := strconv.Atoi(q.Get("Limit")); err == nil {
		limit = v
	}
	if len(list) > limit {
		return list[:limit], true
	}
	return list, false
}
