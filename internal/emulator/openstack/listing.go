package openstack

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
)

// filterable is an object whose attributes can be filtered on in a list
// (field).
type filterable interface {
	tagList() []string
}

// field is the value of o's attribute name as a list filter compares it
// (booleans "true"/"false", numbers in decimal, a list as multi values, nil
// as ""); ok is false when the attribute cannot be filtered on. The
// filterable attributes are the fields tagged `filter:"<name>[,<name>]"`,
// embedded structs' included, and those o answers itself (extraField).
func field(o any, name string) (string, bool) {
	if x, ok := o.(interface{ extraField(string) (string, bool) }); ok {
		if v, ok := x.extraField(name); ok {
			return v, true
		}
	}
	v := reflect.ValueOf(o)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	idx, ok := filterFields(v.Type())[name]
	if !ok {
		return "", false
	}
	return filterValue(v.FieldByIndex(idx)), true
}

// filterFieldsOf caches each type's filter tags: name → field index.
var filterFieldsOf sync.Map

func filterFields(t reflect.Type) map[string][]int {
	if m, ok := filterFieldsOf.Load(t); ok {
		return m.(map[string][]int)
	}
	m := map[string][]int{}
	for _, f := range reflect.VisibleFields(t) {
		for n := range strings.SplitSeq(f.Tag.Get("filter"), ",") {
			if n != "" {
				m[n] = f.Index
			}
		}
	}
	filterFieldsOf.Store(t, m)
	return m
}

func filterValue(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return ""
		}
		return filterValue(v.Elem())
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Int, reflect.Int64, reflect.Int32:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Slice:
		vs := make([]string, v.Len())
		for i := range vs {
			vs[i] = v.Index(i).String()
		}
		return multi(vs...)
	}
	return v.String()
}

// multiSep separates the values of a multi-valued attribute returned by
// filterable.field (such as a port's security groups): the filter matches
// when any value is equal.
const multiSep = "\x00"

func multi(vs ...string) string { return strings.Join(vs, multiSep) + multiSep }

// listQuery is a parsed list request of Neutron or Octavia.
type listQuery struct {
	limit   int
	marker  string
	filters map[string][]string
	tags    [4][]string // tags, tags-any, not-tags, not-tags-any
	fields  []string
}

var reservedListKeys = map[string]bool{
	"limit": true, "marker": true, "page_reverse": true, "sort_key": true, "sort_dir": true,
	"fields": true, "tags": true, "tags-any": true, "not-tags": true, "not-tags-any": true,
}

// parseListQuery parses limit, marker, tags and attribute filters; every
// filter key must be known to proto.
func parseListQuery(q url.Values, proto filterable) (*listQuery, error) {
	lq := &listQuery{marker: q.Get("marker"), filters: map[string][]string{}}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("limit must be a non-negative integer, got %q", s)
		}
		lq.limit = n
	}
	for i, k := range []string{"tags", "tags-any", "not-tags", "not-tags-any"} {
		for _, v := range q[k] {
			for _, t := range strings.Split(v, ",") {
				if t != "" {
					lq.tags[i] = append(lq.tags[i], t)
				}
			}
		}
	}
	for _, v := range q["fields"] {
		lq.fields = append(lq.fields, strings.Split(v, ",")...)
	}
	for k, vs := range q {
		if reservedListKeys[k] {
			continue
		}
		if _, ok := field(proto, k); !ok {
			return nil, fmt.Errorf("[%s] is invalid attribute for filtering", k)
		}
		lq.filters[k] = vs
	}
	return lq, nil
}

// match reports whether o passes the filters and tag filters.
func (lq *listQuery) match(o filterable) bool {
	for k, vs := range lq.filters {
		v, _ := field(o, k)
		ok := false
		for _, want := range vs {
			if v == want || (v == "true" || v == "false") && strings.EqualFold(v, want) ||
				strings.Contains(v, multiSep) && has(strings.Split(v, multiSep), want) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if len(lq.tags[0])+len(lq.tags[1])+len(lq.tags[2])+len(lq.tags[3]) > 0 {
		return matchTags(o.tagList(), lq.tags[0], lq.tags[1], lq.tags[2], lq.tags[3])
	}
	return true
}

// matchTags applies the tags (all of), tags-any, not-tags (not all of) and
// not-tags-any filters.
func matchTags(have, all, anyOf, notAll, notAny []string) bool {
	hasAll := func(ts []string) bool {
		for _, t := range ts {
			if !has(have, t) {
				return false
			}
		}
		return true
	}
	hasAny := func(ts []string) bool {
		for _, t := range ts {
			if has(have, t) {
				return true
			}
		}
		return false
	}
	return (len(all) == 0 || hasAll(all)) &&
		(len(anyOf) == 0 || hasAny(anyOf)) &&
		(len(notAll) == 0 || !hasAll(notAll)) &&
		(len(notAny) == 0 || !hasAny(notAny))
}

// nextLink builds the href of the next page: the request URL with the marker
// replaced.
func nextLink(r *http.Request, marker string) string {
	q := r.URL.Query()
	q.Set("marker", marker)
	return baseURL(r) + r.URL.Path + "?" + q.Encode()
}

// selectFields keeps only the given top-level JSON fields of each view.
func selectFields(views []any, fields []string) []any {
	out := make([]any, len(views))
	for i, v := range views {
		b, _ := json.Marshal(v)
		var m map[string]json.RawMessage
		_ = json.Unmarshal(b, &m)
		sel := map[string]json.RawMessage{}
		for _, f := range fields {
			if raw, ok := m[f]; ok {
				sel[f] = raw
			}
		}
		out[i] = sel
	}
	return out
}

// octaviaMaxLimit is Octavia's default [api_settings] pagination_max_limit.
const octaviaMaxLimit = 1000

// listResponse serves a Neutron- or Octavia-style list: {coll: [...],
// coll_links: [...]} with a next link when more objects follow. within, if
// not nil, gives the ids of the objects to list (a parent's children).
func listResponse[T filterable](e *Emulator, w http.ResponseWriter, r *http.Request, st *core.Store[T], proto T, coll string,
	within func() []string, onError func(w http.ResponseWriter, code int, msg string), view func(T) any) {
	lq, err := parseListQuery(r.URL.Query(), proto)
	if err != nil {
		onError(w, http.StatusBadRequest, err.Error())
		return
	}
	// Octavia pages every list: at most [api_settings] pagination_max_limit
	// (1,000 by default) objects, whatever limit asks. Neutron's default has
	// no such bound.
	if strings.HasPrefix(r.URL.Path, "/load-balancer/") && (lq.limit == 0 || lq.limit > octaviaMaxLimit) {
		lq.limit = octaviaMaxLimit
	}
	views, lastID, err := core.ViewsOf(locker{e}, st, within, lq.marker, lq.limit, func(o T) bool { return lq.match(o) }, view, func(o T) string { id, _ := field(o, "id"); return id })
	if err != nil {
		onError(w, http.StatusBadRequest, fmt.Sprintf("marker %s not found", lq.marker))
		return
	}
	more := lastID != ""
	if len(lq.fields) > 0 {
		views = selectFields(views, lq.fields)
	}
	body := map[string]any{coll: views}
	if lq.limit > 0 || lq.marker != "" {
		links := []map[string]string{}
		if more {
			links = append(links, map[string]string{"rel": "next", "href": nextLink(r, lastID)})
		}
		body[coll+"_links"] = links
	}
	writeJSON(w, http.StatusOK, body)
}

// collection is one REST collection of Neutron or Octavia under a prefix:
// GET lists it (filters, paging, fields) and GET {id} reads one; the writes
// are the handlers given (nil: not served).
type collection[E any, T interface {
	*E
	filterable
}] struct {
	// path is the collection's path ("security-groups"); key is the JSON key
	// of one object ("security_group"), key+"s" of a list.
	path, key string
	st        *core.Store[T]
	view      func(T) any
	// notFound answers a GET of an id there is not; badRequest a bad query.
	notFound               func(w http.ResponseWriter, id string)
	badRequest             func(w http.ResponseWriter, code int, msg string)
	create, update, remove http.HandlerFunc
}

// route registers the collection's routes under the prefix pre.
func (c collection[E, T]) route(e *Emulator, pre string) {
	p := pre + "/" + c.path
	e.handle("GET "+p, func(w http.ResponseWriter, r *http.Request) {
		listResponse(e, w, r, c.st, T(new(E)), c.key+"s", nil, c.badRequest, c.view)
	})
	e.handle("GET "+p+"/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		v, ok := core.View(locker{e}, c.st, id, c.view)
		if !ok {
			c.notFound(w, id)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{c.key: v})
	})
	for _, w := range []struct {
		pattern string
		h       http.HandlerFunc
	}{{"POST " + p, c.create}, {"PUT " + p + "/{id}", c.update}, {"DELETE " + p + "/{id}", c.remove}} {
		if w.h != nil {
			e.handle(w.pattern, w.h)
		}
	}
}
