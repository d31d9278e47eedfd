package openstack

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

const (
	domainID   = "default"
	domainName = "Default"
)

type user struct {
	ID, Name, Password string
	DefaultProjectID   string
}

type appCred struct {
	ID, Name, Secret, UserID, ProjectID string
}

type token struct {
	ID        string
	UserID    string
	ProjectID string
	Methods   []string
	AppCredID string
	Issued    time.Time
	Expires   time.Time
}

func keystoneError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]any{"error": map[string]any{
		"code": code, "message": msg, "title": http.StatusText(code),
	}})
}

// writeUnauthorized answers 401 as keystonemiddleware does in every service.
func writeUnauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", "Keystone uri='/identity'")
	keystoneError(w, http.StatusUnauthorized, "The request you have made requires authentication.")
}

// authorized reports whether r carries a valid, unexpired, project-scoped token.
func (e *Emulator) authorized(r *http.Request) bool {
	id := r.Header.Get("X-Auth-Token")
	if id == "" {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.tokens[id]
	return ok && t.ProjectID != "" && e.clock().Before(t.Expires)
}

func (e *Emulator) routeKeystone() {
	versions := func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusMultipleChoices, map[string]any{"versions": map[string]any{
			"values": []any{keystoneVersion(baseURL(r))},
		}})
	}
	e.handlePublic("GET /identity/{$}", versions)
	e.handlePublic("GET /identity", versions)
	version := func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"version": keystoneVersion(baseURL(r))})
	}
	e.handlePublic("GET /identity/v3", version)
	e.handlePublic("GET /identity/v3/{$}", version)
	e.handlePublic("POST /identity/v3/auth/tokens", writeOp(e, decodeAuth, e.createToken, keystoneErr))
	e.handle("GET /identity/v3/auth/tokens", e.getToken)
	e.handle("HEAD /identity/v3/auth/tokens", e.getToken)
	e.handle("DELETE /identity/v3/auth/tokens", e.deleteToken)
}

func keystoneVersion(base string) map[string]any {
	return map[string]any{
		"id": "v3.14", "status": "stable", "updated": "2020-04-07T00:00:00Z",
		"links":       []any{map[string]string{"rel": "self", "href": base + "/identity/v3/"}},
		"media-types": []any{map[string]string{"base": "application/json", "type": "application/vnd.openstack.identity-v3+json"}},
	}
}

type authUserRef struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Password string `json:"password"`
	Domain   *struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"domain"`
}

type authRequest struct {
	Auth struct {
		Identity struct {
			Methods  []string `json:"methods"`
			Password *struct {
				User authUserRef `json:"user"`
			} `json:"password"`
			Token *struct {
				ID string `json:"id"`
			} `json:"token"`
			ApplicationCredential *struct {
				ID     string       `json:"id"`
				Name   string       `json:"name"`
				Secret string       `json:"secret"`
				User   *authUserRef `json:"user"`
			} `json:"application_credential"`
		} `json:"identity"`
		Scope json.RawMessage `json:"scope"`
	} `json:"auth"`
}

type scopeRequest struct {
	Project *struct {
		ID     string `json:"id"`
		Name   string `json:"name"`
		Domain *struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"domain"`
	} `json:"project"`
	Domain json.RawMessage `json:"domain"`
	System json.RawMessage `json:"system"`
}

// findUser resolves a user reference (id, or name within a domain); call with mu held.
func (e *Emulator) findUser(ref authUserRef) *user {
	if ref.ID != "" {
		return e.users[ref.ID]
	}
	if ref.Domain == nil || (ref.Domain.ID != "" && ref.Domain.ID != domainID) ||
		(ref.Domain.ID == "" && ref.Domain.Name != domainName) {
		return nil
	}
	for _, u := range e.users {
		if u.Name == ref.Name {
			return u
		}
	}
	return nil
}

func (e *Emulator) getToken(w http.ResponseWriter, r *http.Request) {
	now := e.lock()
	defer e.mu.Unlock()
	t, ok := e.tokens[r.Header.Get("X-Subject-Token")]
	if !ok || !now.Before(t.Expires) {
		keystoneError(w, http.StatusNotFound, "Could not find token.")
		return
	}
	w.Header().Set("X-Subject-Token", t.ID)
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	writeJSON(w, http.StatusOK, e.tokenBody(t, e.users[t.UserID], baseURL(r)))
}

func (e *Emulator) deleteToken(w http.ResponseWriter, r *http.Request) {
	e.lock()
	defer e.mu.Unlock()
	id := r.Header.Get("X-Subject-Token")
	if _, ok := e.tokens[id]; !ok {
		keystoneError(w, http.StatusNotFound, "Could not find token.")
		return
	}
	delete(e.tokens, id)
	w.WriteHeader(http.StatusNoContent)
}

// tokenBody renders a token; call with mu held.
func (e *Emulator) tokenBody(t *token, u *user, base string) map[string]any {
	if u == nil {
		u = &user{}
	}
	tok := map[string]any{
		"methods":    t.Methods,
		"audit_ids":  []string{t.ID[:22]},
		"expires_at": t.Expires.UTC().Format(keystoneTimeFormat),
		"issued_at":  t.Issued.UTC().Format(keystoneTimeFormat),
		"is_domain":  false,
		"user": map[string]any{
			"id": u.ID, "name": u.Name, "password_expires_at": nil,
			"domain": map[string]string{"id": domainID, "name": domainName},
		},
	}
	if t.ProjectID != "" {
		tok["project"] = map[string]any{
			"id": t.ProjectID, "name": e.projectName,
			"domain": map[string]string{"id": domainID, "name": domainName},
		}
		tok["roles"] = []map[string]string{
			{"id": "9fe2ff9ee4384b1894a90878d3e92bab", "name": "member"},
			{"id": "4a8e3d8e5b1a4f0c8b8e8a5c2d1f3e7a", "name": "reader"},
			{"id": "7d1c5e2b9a3f4c6e8b0d2f4a6c8e0b1d", "name": "load-balancer_member"},
		}
		tok["catalog"] = e.catalog(base)
	}
	if t.AppCredID != "" {
		c := e.appCreds[t.AppCredID]
		tok["application_credential"] = map[string]any{"id": c.ID, "name": c.Name, "restricted": true}
	}
	return map[string]any{"token": tok}
}

func (e *Emulator) catalog(base string) []any {
	entry := func(typ, name, url string) map[string]any {
		eps := []any{}
		for _, iface := range []string{"public", "internal"} {
			eps = append(eps, map[string]string{
				"id": hex.EncodeToString([]byte(typ + iface))[:16], "interface": iface,
				"region": e.opts.Region, "region_id": e.opts.Region, "url": url,
			})
		}
		return map[string]any{"id": hex.EncodeToString([]byte(name)), "type": typ, "name": name, "endpoints": eps}
	}
	cat := []any{
		entry("identity", "keystone", base+"/identity/v3"),
		entry("compute", "nova", base+"/compute/v2.1"),
		entry("network", "neutron", base+"/network/"),
		entry("load-balancer", "octavia", base+"/load-balancer/"),
	}
	if !e.opts.NoKeyManager {
		cat = append(cat, entry("key-manager", "barbican", base+"/key-manager/"))
	}
	return cat
}

func newTokenID() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return "gAAAAA" + strings.TrimRight(hex.EncodeToString(b[:]), "=")
}

func has(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
