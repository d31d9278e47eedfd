package cloudstack

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Resource tags (createTags, deleteTags, listTags; asynchronous changes): what
// makes a load balancer rule or a public address ours. Views carry their
// resource's tags; lists filter on tags[i].key/value (all must match).

type tag struct {
	key, value, resourceType, resourceID string
}

// resourceTypes are the tag resource types the emulator keeps.
var resourceTypes = map[string]bool{"LoadBalancer": true, "PublicIpAddress": true, "UserVm": true, "FirewallRule": true, "NetworkACL": true}

var mapParam = regexp.MustCompile(`^([a-z]+)\[(\d+)\]\.(key|value)$`)

// tagsParam reads the map parameter tags (tags[i].key, tags[i].value), as
// cloudstack-go sends one.
func tagsParam(p url.Values) map[string]string {
	keys, values := map[string]string{}, map[string]string{}
	for k, v := range p {
		m := mapParam.FindStringSubmatch(k)
		if m == nil || m[1] != "tags" {
			continue
		}
		if m[3] == "key" {
			keys[m[2]] = v[0]
		} else {
			values[m[2]] = v[0]
		}
	}
	out := map[string]string{}
	for i, k := range keys {
		out[k] = values[i]
	}
	return out
}

func (e *Emulator) tagsOf(id string) []any {
	out := []any{}
	for _, t := range e.tags {
		if t.resourceID == id {
			out = append(out, e.tagView(t))
		}
	}
	return out
}

func (e *Emulator) tagView(t *tag) map[string]any {
	return map[string]any{"key": t.key, "value": t.value, "resourcetype": t.resourceType, "resourceid": t.resourceID,
		"account": e.fx.AccountName, "domainid": e.fx.DomainID, "domain": "ROOT"}
}

// tagged says whether resource id carries every tag of want.
func (e *Emulator) tagged(id string, want map[string]string) bool {
	for k, v := range want {
		if !slices.ContainsFunc(e.tags, func(t *tag) bool { return t.resourceID == id && t.key == k && t.value == v }) {
			return false
		}
	}
	return true
}

func (e *Emulator) exists(resourceType, id string) bool {
	switch resourceType {
	case "LoadBalancer":
		_, ok := e.rules.Get(id)
		return ok
	case "PublicIpAddress":
		_, ok := e.ips.Get(id)
		return ok
	case "UserVm":
		_, ok := e.vms.Get(id)
		return ok
	case "FirewallRule":
		return slices.ContainsFunc(e.firewall, func(f *firewallRule) bool { return f.id == id })
	case "NetworkACL":
		return slices.ContainsFunc(e.acl, func(a *aclItem) bool { return a.id == id })
	}
	return false
}

func (e *Emulator) tagParams(command string, p url.Values) (string, []string, *apiError) {
	rt := p.Get("resourcetype")
	if !resourceTypes[rt] {
		return "", nil, &apiError{code: codeParamError, cs: csInvalidValue, text: "Unable to find resource type by name " + rt}
	}
	var ids []string
	for _, id := range strings.Split(p.Get("resourceids"), ",") {
		if id = strings.TrimSpace(id); id == "" {
			continue
		}
		if !e.exists(rt, id) {
			return "", nil, &apiError{code: codeParamError, cs: csInvalidValue, text: "Unable to find resource by id " + id + " and type " + rt}
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return "", nil, paramError("Unable to execute API command %s due to missing parameter resourceids", strings.ToLower(command))
	}
	return rt, ids, nil
}

func (e *Emulator) createTags(a *account, p url.Values, now time.Time) (any, *apiError) {
	rt, ids, aerr := e.tagParams("createTags", p)
	if aerr != nil {
		return nil, aerr
	}
	want := tagsParam(p)
	if len(want) == 0 {
		return nil, paramError("Unable to execute API command createtags due to missing parameter tags")
	}
	for _, id := range ids {
		for k := range want {
			if slices.ContainsFunc(e.tags, func(t *tag) bool { return t.resourceID == id && t.key == k }) {
				return nil, &apiError{code: codeParamError, cs: csInvalidValue, text: "tag " + k + " already on the resource " + id}
			}
		}
	}
	job := e.startJob(a, "org.apache.cloudstack.api.command.user.tag.CreateTagsCmd", "None", "", now, func() (any, error) {
		// Checked again as the job runs: another job may have put the key
		// there meanwhile (the server's resource_tags table is unique per
		// resource and key; the job then fails).
		for _, id := range ids {
			for k := range want {
				if slices.ContainsFunc(e.tags, func(t *tag) bool { return t.resourceID == id && t.key == k }) {
					return nil, fmt.Errorf("tag %s already on the resource %s", k, id)
				}
			}
		}
		for _, id := range ids {
			for k, v := range want {
				e.tags = append(e.tags, &tag{key: k, value: v, resourceType: rt, resourceID: id})
			}
		}
		return map[string]any{"success": true}, nil
	})
	return map[string]any{"jobid": job}, nil
}

func (e *Emulator) deleteTags(a *account, p url.Values, now time.Time) (any, *apiError) {
	rt, ids, aerr := e.tagParams("deleteTags", p)
	if aerr != nil {
		return nil, aerr
	}
	which := tagsParam(p)
	job := e.startJob(a, "org.apache.cloudstack.api.command.user.tag.DeleteTagsCmd", "None", "", now, func() (any, error) {
		e.tags = slices.DeleteFunc(e.tags, func(t *tag) bool {
			if t.resourceType != rt || !slices.Contains(ids, t.resourceID) {
				return false
			}
			v, named := which[t.key]
			return len(which) == 0 || (named && (v == "" || v == t.value))
		})
		return map[string]any{"success": true}, nil
	})
	return map[string]any{"jobid": job}, nil
}

func (e *Emulator) listTags(_ *account, p url.Values, _ time.Time) (any, *apiError) {
	page, size, perr := e.paging(p)
	if perr != nil {
		return nil, perr
	}
	var items []any
	for _, t := range e.tags {
		if (p.Get("resourceid") != "" && p.Get("resourceid") != t.resourceID) ||
			(p.Get("resourcetype") != "" && p.Get("resourcetype") != t.resourceType) ||
			(p.Get("key") != "" && p.Get("key") != t.key) || (p.Get("value") != "" && p.Get("value") != t.value) {
			continue
		}
		items = append(items, e.tagView(t))
	}
	return pageOf("tag", items, page, size), nil
}

// forget drops the tags of a deleted resource, as the server does.
func (e *Emulator) forget(id string) {
	e.tags = slices.DeleteFunc(e.tags, func(t *tag) bool { return t.resourceID == id })
}
