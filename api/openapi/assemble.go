package openapi

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
)

// assemble is the document name from fsys: <name>.yaml, the base (info,
// servers, tags, the shared components), with the paths and components of
// every fragment <name>/*.yaml merged into it, in the fragments' name order.
// A document without fragments is its base, byte for byte.
//
// A fragment holds only paths and components. A path or component defined
// twice, or a local $ref that resolves to nothing, is an error: the merge
// would otherwise keep one definition silently or serve a broken contract.
func assemble(fsys fs.FS, name string) ([]byte, error) {
	baseFile := name + ".yaml"
	base, err := fs.ReadFile(fsys, baseFile)
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	fragments, err := fs.Glob(fsys, path.Join(name, "*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	if len(fragments) == 0 {
		return base, nil
	}
	doc, err := decodeMapping(baseFile, base)
	if err != nil {
		return nil, err
	}
	// definedIn names the file of each path ("paths /pix") and component
	// ("schemas Error") merged so far, for the refusal of a second one.
	definedIn := map[string]string{}
	paths, err := section(doc, "paths", baseFile)
	if err != nil {
		return nil, err
	}
	for _, item := range paths {
		definedIn["paths "+keyOf(item)] = baseFile
	}
	components, err := section(doc, "components", baseFile)
	if err != nil {
		return nil, err
	}
	for _, kind := range components {
		entries, err := asMapping(kind.Value, baseFile+": components."+keyOf(kind))
		if err != nil {
			return nil, err
		}
		for _, entry := range entries {
			definedIn[keyOf(kind)+" "+keyOf(entry)] = baseFile
		}
	}

	for _, file := range fragments {
		source, err := fs.ReadFile(fsys, file)
		if err != nil {
			return nil, fmt.Errorf("openapi: %w", err)
		}
		fragment, err := decodeMapping(file, source)
		if err != nil {
			return nil, err
		}
		for _, top := range fragment {
			switch keyOf(top) {
			case "paths":
				entries, err := asMapping(top.Value, file+": paths")
				if err != nil {
					return nil, err
				}
				if paths, err = mergeInto(paths, entries, "paths", file, definedIn); err != nil {
					return nil, err
				}
			case "components":
				kinds, err := asMapping(top.Value, file+": components")
				if err != nil {
					return nil, err
				}
				for _, kind := range kinds {
					entries, err := asMapping(kind.Value, file+": components."+keyOf(kind))
					if err != nil {
						return nil, err
					}
					at := indexOf(components, keyOf(kind))
					if at < 0 {
						components = append(components, yaml.MapItem{Key: keyOf(kind), Value: yaml.MapSlice{}})
						at = len(components) - 1
					}
					merged, err := mergeInto(components[at].Value.(yaml.MapSlice), entries, keyOf(kind), file, definedIn)
					if err != nil {
						return nil, err
					}
					components[at].Value = merged
				}
			default:
				return nil, fmt.Errorf("openapi: %s: %q: a fragment holds only paths and components", file, keyOf(top))
			}
		}
	}
	doc[indexOf(doc, "paths")].Value = paths
	doc[indexOf(doc, "components")].Value = components

	if err := checkReferences(doc, doc, ""); err != nil {
		return nil, fmt.Errorf("openapi: %s: %w", name, err)
	}
	out, err := yaml.MarshalWithOptions(doc, yaml.Indent(2), yaml.IndentSequence(true), yaml.UseLiteralStyleIfMultiline(true))
	if err != nil {
		return nil, fmt.Errorf("openapi: %s: %w", name, err)
	}
	return out, nil
}

// decodeMapping decodes source, which must be a mapping, keeping its keys'
// order (the served document keeps the files' order).
func decodeMapping(file string, source []byte) (yaml.MapSlice, error) {
	var v any
	if err := yaml.UnmarshalWithOptions(source, &v, yaml.UseOrderedMap()); err != nil {
		return nil, fmt.Errorf("openapi: %s: %w", file, err)
	}
	return asMapping(v, file)
}

// asMapping is v as a mapping; an empty flow mapping ({}) or nothing is an
// empty one.
func asMapping(v any, where string) (yaml.MapSlice, error) {
	switch m := v.(type) {
	case yaml.MapSlice:
		return m, nil
	case nil:
		return yaml.MapSlice{}, nil
	case map[string]any:
		if len(m) == 0 {
			return yaml.MapSlice{}, nil
		}
	}
	return nil, fmt.Errorf("openapi: %s: want a mapping, got %T", where, v)
}

// section is the mapping under key in doc, added (empty) when absent.
func section(doc yaml.MapSlice, key, file string) (yaml.MapSlice, error) {
	at := indexOf(doc, key)
	if at < 0 {
		return nil, fmt.Errorf("openapi: %s: no %s (the base declares where the fragments' %s go)", file, key, key)
	}
	return asMapping(doc[at].Value, file+": "+key)
}

// mergeInto appends entries to into, refusing a name already defined.
func mergeInto(into, entries yaml.MapSlice, kind, file string, definedIn map[string]string) (yaml.MapSlice, error) {
	for _, entry := range entries {
		id := kind + " " + keyOf(entry)
		if first, ok := definedIn[id]; ok {
			return nil, fmt.Errorf("openapi: %s: %s %s is already defined in %s", file, kind, keyOf(entry), first)
		}
		definedIn[id] = file
		into = append(into, entry)
	}
	return into, nil
}

func keyOf(item yaml.MapItem) string { return fmt.Sprint(item.Key) }

func indexOf(m yaml.MapSlice, key string) int {
	for i, item := range m {
		if keyOf(item) == key {
			return i
		}
	}
	return -1
}

// checkReferences refuses a $ref in v that is not a pointer into doc
// ("#/..."; the document stands alone) or that points at nothing.
func checkReferences(doc yaml.MapSlice, v any, at string) error {
	switch node := v.(type) {
	case yaml.MapSlice:
		var errs []error
		for _, item := range node {
			if keyOf(item) == "$ref" {
				if ref, ok := item.Value.(string); !ok || !resolves(doc, ref) {
					errs = append(errs, fmt.Errorf("%s: $ref %v resolves to nothing", at, item.Value))
				}
				continue
			}
			errs = append(errs, checkReferences(doc, item.Value, at+"/"+keyOf(item)))
		}
		return errors.Join(errs...)
	case []any:
		var errs []error
		for i, element := range node {
			errs = append(errs, checkReferences(doc, element, at+"/"+strconv.Itoa(i)))
		}
		return errors.Join(errs...)
	}
	return nil
}

// resolves tells whether ref, a JSON pointer fragment (RFC 6901), names a
// member of doc.
func resolves(doc yaml.MapSlice, ref string) bool {
	pointer, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return false
	}
	var node any = doc
	for _, token := range strings.Split(pointer, "/") {
		token = strings.NewReplacer("~1", "/", "~0", "~").Replace(token)
		switch n := node.(type) {
		case yaml.MapSlice:
			at := indexOf(n, token)
			if at < 0 {
				return false
			}
			node = n[at].Value
		case []any:
			i, err := strconv.Atoi(token)
			if err != nil || i < 0 || i >= len(n) {
				return false
			}
			node = n[i]
		default:
			return false
		}
	}
	return true
}
