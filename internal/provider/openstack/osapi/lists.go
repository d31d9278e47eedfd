package osapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/pagination"
)

// Lists are read without gophercloud's pagers: those decode every page into
// generic maps, encode them back to JSON and decode that into the typed
// structs. Here each page is decoded once, straight into a type holding only
// what the CCM uses, and Neutron and Octavia lists ask only for those fields
// (their fields parameter; Nova has none). Measured at 500 Nodes: gophercloud's
// round trip of the server and port lists allocated about 50 MB while the CCM
// started, and made most of its peak memory; with every Node a member of every
// pool, a member list of 2,000 Nodes is about a megabyte, and the service
// workers each hold such lists at once.

// maxListPages bounds the pages of one list (at Octavia's 1,000 a page, far
// above any real pool).
var maxListPages = 1000

// allPages reads every page of a gophercloud list and extracts its items, as
// AllPages and an Extract would, but ends with an error after maxListPages
// pages: a cloud whose next link never ends would otherwise be followed
// until the caller's deadline, every page kept.
func allPages[T any](ctx context.Context, pager pagination.Pager, extract func(pagination.Page) ([]T, error)) ([]T, error) {
	var out []T
	pages := 0
	err := pager.EachPage(ctx, func(_ context.Context, p pagination.Page) (bool, error) {
		if pages++; pages > maxListPages {
			return false, fmt.Errorf("more than %d pages", maxListPages)
		}
		items, err := extract(p)
		out = append(out, items...)
		return err == nil, err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// mapped turns a list's answer into the CCM's view of each item (an error
// as it is): mapped(asSubnet)(allPages(…)).
func mapped[T, U any](as func(*T) U) func([]T, error) ([]U, error) {
	return func(all []T, err error) ([]U, error) {
		if err != nil {
			return nil, err
		}
		out := make([]U, len(all))
		for i := range all {
			out[i] = as(&all[i])
		}
		return out, nil
	}
}

// viewed turns an answer of one object into the CCM's view of it (an
// error as it is).
func viewed[T, U any](as func(*T) U) func(*T, error) (U, error) {
	return func(o *T, err error) (U, error) {
		if err != nil {
			var none U
			return none, err
		}
		return as(o), nil
	}
}

// listAll GETs every page of a list under path (the items under key, the next
// page in key_links) into T.
func listAll[T any](ctx context.Context, client *gophercloud.ServiceClient, key string, query url.Values, path ...string) ([]T, error) {
	out, _, err := listAllAnswered[T](ctx, client, key, query, path...)
	return out, err
}

// listAllAnswered is listAll, and the time the first page was answered (its
// Date header; zero when it has none).
func listAllAnswered[T any](ctx context.Context, client *gophercloud.ServiceClient, key string, query url.Values, path ...string) ([]T, time.Time, error) {
	next := client.ServiceURL(path...)
	if len(query) > 0 {
		next += "?" + query.Encode()
	}
	var out []T
	var answered time.Time
	for range maxListPages {
		var page map[string]json.RawMessage
		resp, err := client.Get(ctx, next, &page, nil) //nolint:bodyclose // gophercloud decodes and closes it
		if err != nil {
			return nil, time.Time{}, err
		}
		if answered.IsZero() && resp != nil {
			answered, _ = http.ParseTime(resp.Header.Get("Date"))
		}
		var items []T
		if raw, ok := page[key]; ok {
			if err := json.Unmarshal(raw, &items); err != nil {
				return nil, time.Time{}, fmt.Errorf("decoding %s: %w", key, err)
			}
		}
		out = append(out, items...)
		next = ""
		if raw, ok := page[key+"_links"]; ok {
			var links []gophercloud.Link
			if err := json.Unmarshal(raw, &links); err != nil {
				return nil, time.Time{}, fmt.Errorf("decoding %s_links: %w", key, err)
			}
			for _, l := range links {
				if l.Rel == "next" {
					next = l.Href
				}
			}
		}
		if next == "" || len(items) == 0 {
			return out, answered, nil
		}
	}
	return nil, time.Time{}, fmt.Errorf("listing %s: more than %d pages", key, maxListPages)
}
