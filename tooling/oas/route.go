package oas

import (
	"net/url"
	"strings"
)

// Route is a request's documented path and, when the path documents the
// method, its operation.
type Route struct {
	Path *PathItem
	// Operation is nil when the path does not document the method.
	Operation *Operation
	// Params are the path parameters' values, unescaped, by name.
	Params map[string]string
}

// FindRoute routes a request by its path alone (escaped, as sent, without
// the query): the documented path it matches, a literal segment winning
// over a template ({name}) as OpenAPI says, then the method's operation
// there. nil: no documented path matches.
func (d *Document) FindRoute(method, escapedPath string) *Route {
	if !strings.HasPrefix(escapedPath, "/") {
		return nil
	}
	segs := strings.Split(escapedPath[1:], "/")
	var best *PathItem
	var bestRank []bool
	for _, p := range d.Paths {
		rank, ok := matchSegments(p.segments, segs)
		if ok && (best == nil || outranks(rank, bestRank)) {
			best, bestRank = p, rank
		}
	}
	if best == nil {
		return nil
	}
	rt := &Route{Path: best, Params: map[string]string{}}
	for i, seg := range best.segments {
		if name, ok := templateName(seg); ok {
			v, err := url.PathUnescape(segs[i])
			if err != nil {
				v = segs[i]
			}
			rt.Params[name] = v
		}
	}
	for _, op := range best.Operations {
		if strings.EqualFold(op.Method, method) {
			rt.Operation = op
		}
	}
	return rt
}

// matchSegments says whether the request's segments match the template's,
// and which of them matched literally.
func matchSegments(template, segs []string) ([]bool, bool) {
	if len(template) != len(segs) {
		return nil, false
	}
	rank := make([]bool, len(segs))
	for i, t := range template {
		if _, ok := templateName(t); ok {
			if segs[i] == "" {
				return nil, false
			}
			continue
		}
		s, err := url.PathUnescape(segs[i])
		if err != nil || s != t {
			return nil, false
		}
		rank[i] = true
	}
	return rank, true
}

// outranks: the first segment where a and b differ is literal in a.
func outranks(a, b []bool) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i]
		}
	}
	return false
}

// templateName is the name of a whole-segment template ({name}).
func templateName(seg string) (string, bool) {
	if len(seg) > 2 && seg[0] == '{' && seg[len(seg)-1] == '}' && !strings.ContainsAny(seg[1:len(seg)-1], "{}") {
		return seg[1 : len(seg)-1], true
	}
	return "", false
}
