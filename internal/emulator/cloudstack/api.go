package cloudstack

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
)

// CloudStack's error codes (api/ApiErrorCode.java) and exception codes
// (CSExceptionErrorCode) the emulator answers with.
const (
	codeUnauthorized = 401
	codeParamError   = 431
	codeUnsupported  = 432
	codeInternal     = 530

	csDefault      = 9999 // ServerApiException and anything unmapped
	csInvalidValue = 4350 // InvalidParameterValueException
)

// apiError is an error answer.
type apiError struct {
	code, cs int // cs 0: no cserrorcode (the 401 of a failed signature check)
	text     string
}

func paramError(format string, a ...any) *apiError {
	return &apiError{code: codeParamError, cs: csDefault, text: fmt.Sprintf(format, a...)}
}

// invalidID is ParamProcessWorker's answer for an id that resolves to nothing
// (cloudstack-go's Get*ByID helpers match this text to mean "no match").
func invalidID(command, id string) *apiError {
	return paramError("Unable to execute API command %s due to invalid value. Invalid parameter id value=%s due to incorrect long value format, or entity does not exist or due to incorrect parameter annotation for the field in api cmd class.",
		strings.ToLower(command), id)
}

// handler answers a command for an account with the parsed parameters. An
// asynchronous command's answer is its job's ({"jobid": …}).
type handler func(a *account, p url.Values, now time.Time) (any, *apiError)

type command struct {
	admin bool // admin keys only
	fn    handler
}

func (e *Emulator) commands() map[string]command {
	return map[string]command{
		"listZones":                     {fn: e.listZones},
		"listProjects":                  {fn: e.listProjects},
		"listCapabilities":              {fn: e.listCapabilities},
		"listManagementServersMetrics":  {admin: true, fn: e.listManagementServersMetrics},
		"listVirtualMachines":           {fn: e.listVirtualMachines},
		"listPublicIpAddresses":         {fn: e.listPublicIPAddresses},
		"associateIpAddress":            {fn: e.associateIPAddress},
		"disassociateIpAddress":         {fn: e.disassociateIPAddress},
		"queryAsyncJobResult":           {fn: e.queryAsyncJobResult},
		"listAsyncJobs":                 {fn: e.listAsyncJobs},
		"createLoadBalancerRule":        {fn: e.createLoadBalancerRule},
		"listLoadBalancerRules":         {fn: e.listLoadBalancerRules},
		"updateLoadBalancerRule":        {fn: e.updateLoadBalancerRule},
		"deleteLoadBalancerRule":        {fn: e.deleteLoadBalancerRule},
		"assignToLoadBalancerRule":      {fn: e.assignToLoadBalancerRule},
		"removeFromLoadBalancerRule":    {fn: e.removeFromLoadBalancerRule},
		"listLoadBalancerRuleInstances": {fn: e.listLoadBalancerRuleInstances},
		"listNetworks":                  {fn: e.listNetworks},
		"createFirewallRule":            {fn: e.createFirewallRule},
		"listFirewallRules":             {fn: e.listFirewallRules},
		"deleteFirewallRule":            {fn: e.deleteFirewallRule},
		"listNetworkACLLists":           {fn: e.listNetworkACLLists},
		"listNetworkACLs":               {fn: e.listNetworkACLs},
		"createNetworkACL":              {fn: e.createNetworkACL},
		"deleteNetworkACL":              {fn: e.deleteNetworkACL},
		"updateNetworkACLItem":          {fn: e.updateNetworkACLItem},
		"createTags":                    {fn: e.createTags},
		"deleteTags":                    {fn: e.deleteTags},
		"listTags":                      {fn: e.listTags},
		"createLBHealthCheckPolicy":     {fn: e.createLBHealthCheckPolicy},
		"listLBHealthCheckPolicies":     {fn: e.listLBHealthCheckPolicies},
		"deleteLBHealthCheckPolicy":     {fn: e.deleteLBHealthCheckPolicy},
	}
}

// responseName is the envelope's key: the lower-cased command and "response"
// (BaseCmd.getCommandName), "errorresponse" for no command.
func responseName(cmd string) string {
	if cmd == "" {
		return "errorresponse"
	}
	return strings.ToLower(cmd) + "response"
}

// apiParams are r's parameters as ApiServlet gets them from the servlet
// container (req.getParameterMap()): the query's, then those of a POST's form
// body, query string data before post body data (Servlet spec §3.1). Go's
// r.Form has the body's first; this order makes the command served the one
// cloudapi.OperationFor counts and faults match (the query's first).
func apiParams(r *http.Request) (url.Values, error) {
	if err := r.ParseForm(); err != nil {
		return nil, err
	}
	p := r.URL.Query()
	for k, vs := range r.PostForm {
		p[k] = append(p[k], vs...)
	}
	return p, nil
}

// serveAPI serves /client/api: GET with the parameters in the query, or POST
// with them in the query or a form body (cloudstack-go's PostForm), as
// ApiServlet's doGet and doPost do alike.
func (e *Emulator) serveAPI(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/client/api" {
		http.NotFound(w, r)
		return
	}
	p, err := apiParams(r)
	if err != nil {
		writeError(w, "errorresponse", paramError("cannot parse the request: %v", err))
		return
	}
	name := p.Get("command")
	cmd, known := e.cmds[name]
	now := e.lock()
	defer e.mu.Unlock()
	a := e.keys[p.Get("apiKey")]
	if a == nil || !verified(p, a.secret, now) {
		resp := "errorresponse"
		if known {
			resp = responseName(name)
		}
		writeError(w, resp, &apiError{code: codeUnauthorized, text: "unable to verify user credentials and/or request signature"})
		return
	}
	if core.OnlyFirstPage(r) && p.Get("page") != "" {
		p = maps.Clone(p) // signed as asked; answered as the first page
		p.Set("page", "1")
	}
	if !known || (cmd.admin && !a.admin) {
		// Newer servers (seen verbatim in cloudstack-kubernetes-provider issue #94).
		writeError(w, "errorresponse", &apiError{code: codeUnsupported, cs: csDefault,
			text: fmt.Sprintf("The API [%s] does not exist or is not available for the account for user id [%s].", name, a.userID)})
		return
	}
	body, aerr := cmd.fn(a, p, now)
	if aerr != nil {
		writeError(w, responseName(name), aerr)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{responseName(name): body})
}

// writeError writes CloudStack's error envelope with the code as HTTP status
// (ApiServlet) and in X-Description.
func writeError(w http.ResponseWriter, resp string, e *apiError) {
	body := map[string]any{"uuidList": []string{}, "errorcode": e.code, "errortext": e.text}
	if e.cs != 0 {
		body["cserrorcode"] = e.cs
	}
	w.Header().Set("X-Description", e.text)
	writeJSON(w, e.code, map[string]any{resp: body})
}

// writeJSON writes v as CloudStack's JSON, its charset named.
func writeJSON(w http.ResponseWriter, code int, v any) {
	core.WriteJSONType(w, code, v, "application/json; charset=UTF-8")
}

// pager makes a list answer claim more objects than it has, so that a
// reader asks for page after page (core.MangleEndlessPages).
type pager struct{}

func (pager) MorePages(_ *http.Request, _ http.Header, body []byte) []byte {
	var doc map[string]map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil || len(doc) != 1 {
		return body
	}
	for resp, fields := range doc {
		if _, ok := fields["count"]; !ok || !strings.HasPrefix(resp, "list") {
			return body
		}
		fields["count"] = json.RawMessage("1000000000")
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return body
	}
	return out
}

// list is a list answer: the total count and the page's items under key; an
// empty list is an empty object, as the server answers it.
func list(key string, total int, items []any) map[string]any {
	if total == 0 {
		return map[string]any{}
	}
	return map[string]any{"count": total, key: items}
}

// pageOf is the list answer of page (from 1) of items, size a page
// (core.PageNumber), with the count of them all.
func pageOf(key string, items []any, page, size int) map[string]any {
	return list(key, len(items), core.PageNumber(items, page, size))
}

// paging reads page and pagesize as BaseListCmd does: both or neither;
// pagesize -1 (without page) is unlimited; none is default.page.size.
func (e *Emulator) paging(p url.Values) (page, size int, err *apiError) {
	ps, pg := p.Get("pagesize"), p.Get("page")
	if ps == "" && pg == "" {
		return 1, e.opts.PageSize, nil
	}
	if ps != "" && pg == "" {
		if ps == "-1" {
			return 0, 0, nil
		}
		return 0, 0, paramError("\"page\" parameter is required when \"pagesize\" is specified")
	}
	if pg != "" && ps == "" {
		return 0, 0, paramError("\"pagesize\" parameter is required when \"page\" is specified")
	}
	page, perr := strconv.Atoi(pg)
	size, serr := strconv.Atoi(ps)
	if perr != nil || serr != nil || page < 1 || size < 1 {
		return 0, 0, paramError("Unable to execute API command due to invalid value: page %q, pagesize %q", pg, ps)
	}
	if size > e.opts.PageSize {
		return 0, 0, paramError("Page size can't exceed max allowed page size value: %d", e.opts.PageSize)
	}
	return page, size, nil
}

// listParams checks what every list command checks: the project, the paging,
// and an id that must resolve (resolves is asked only when p has an id).
// listed answers a list command: its parameters checked (listParams, an
// id given resolving by has), then the page of the views items makes, as
// key.
func (e *Emulator) listed(command, key string, p url.Values, has func(id string) bool, items func() []any) (any, *apiError) {
	page, size, aerr := e.listParams(command, p, func() bool { return has(p.Get("id")) })
	if aerr != nil {
		return nil, aerr
	}
	all := items()
	return pageOf(key, all, page, size), nil
}

// views are the views of the objects of all that keep accepts, in order.
func views[T, V any](all []T, keep func(T) bool, view func(T) V) []any {
	var out []any
	for _, o := range all {
		if keep(o) {
			out = append(out, view(o))
		}
	}
	return out
}

func (e *Emulator) listParams(command string, p url.Values, resolves func() bool) (page, size int, err *apiError) {
	if err := e.checkProject(command, p); err != nil {
		return 0, 0, err
	}
	if page, size, err = e.paging(p); err != nil {
		return 0, 0, err
	}
	if id := p.Get("id"); id != "" && !resolves() {
		return 0, 0, invalidID(command, id)
	}
	return page, size, nil
}

// isUUID says whether s has the form of the ids the server resolves.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
				return false
			}
		}
	}
	return true
}

// inScope says whether an object of projectID is listed for p: with
// projectid, that project's (-1: every project's); without, the account's own.
func (e *Emulator) inScope(p url.Values, projectID string) bool {
	switch want := p.Get("projectid"); want {
	case "":
		return projectID == ""
	case "-1":
		return projectID != ""
	default:
		return projectID == want
	}
}

func (e *Emulator) checkProject(command string, p url.Values) *apiError {
	if id := p.Get("projectid"); id != "" && id != "-1" && id != e.fx.ProjectID {
		if !isUUID(id) {
			return paramError("Unable to execute API command %s due to invalid value. Invalid parameter projectid value=%s due to incorrect long value format, or entity does not exist or due to incorrect parameter annotation for the field in api cmd class.", strings.ToLower(command), id)
		}
		return &apiError{code: codeParamError, cs: csInvalidValue, text: "Unable to find project by id " + id}
	}
	return nil
}

func (e *Emulator) listZones(_ *account, _ url.Values, _ time.Time) (any, *apiError) {
	return list("zone", 1, []any{map[string]any{
		"id": e.fx.ZoneID, "name": e.fx.ZoneName, "networktype": "Advanced", "allocationstate": "Enabled",
		"securitygroupsenabled": false, "localstorageenabled": false, "dhcpprovider": "VirtualRouter", "tags": []any{},
	}}), nil
}

func (e *Emulator) listProjects(_ *account, _ url.Values, _ time.Time) (any, *apiError) {
	return list("project", 1, []any{map[string]any{
		"id": e.fx.ProjectID, "name": e.fx.ProjectName, "displaytext": e.fx.ProjectName, "state": "Active",
		"domainid": e.fx.DomainID, "domain": "ROOT", "account": e.fx.AccountName, "tags": []any{},
	}}), nil
}

func (e *Emulator) listCapabilities(_ *account, _ url.Values, _ time.Time) (any, *apiError) {
	return map[string]any{"capability": map[string]any{
		"cloudstackversion": Version, "apilimitinterval": 1, "apilimitmax": 0, "allowusercreateprojects": true,
		"userpublictemplateenabled": true, "kubernetesserviceenabled": true, "kubernetesclusterexperimentalfeaturesenabled": false,
	}}, nil
}

func (e *Emulator) listManagementServersMetrics(_ *account, _ url.Values, _ time.Time) (any, *apiError) {
	return list("managementserver", 1, []any{map[string]any{
		"id": e.fx.ZoneID, "name": "management-1", "state": "Up", "version": Version, "agentcount": 1,
	}}), nil
}
