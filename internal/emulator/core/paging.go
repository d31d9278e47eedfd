package core

// PageNumber is page (from 1) of items, pageSize a page, as APIs paged by
// number (CloudStack's page and pagesize) answer: page 0 or pageSize 0 or less
// is every item; a page past the end is empty.
func PageNumber[T any](items []T, page, pageSize int) []T {
	if page <= 0 || pageSize <= 0 {
		return items
	}
	start := (page - 1) * pageSize
	if start >= len(items) {
		return nil
	}
	return items[start:min(start+pageSize, len(items))]
}

// PageAfter is up to limit items after the one whose key is marker, as APIs
// paged by marker (OpenStack's limit and marker) answer; ok is false when
// marker names no item. limit 0 or less is every item after marker.
func PageAfter[T any](items []T, key func(T) string, marker string, limit int) (page []T, more bool, ok bool) {
	start := 0
	if marker != "" {
		start = -1
		for i, it := range items {
			if key(it) == marker {
				start = i + 1
				break
			}
		}
		if start < 0 {
			return nil, false, false
		}
	}
	rest := items[start:]
	if limit <= 0 || limit >= len(rest) {
		return rest, false, true
	}
	return rest[:limit], true, true
}
