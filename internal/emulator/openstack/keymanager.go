package openstack

import (
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Barbican, the key manager (the key-manager entry of the catalog): secrets
// with their payloads, containers that group them (a certificate container
// for TLS), and their ACLs. Shapes, codes and messages from the Key Manager
// API reference (docs.openstack.org/barbican/zed/api/reference: secrets,
// containers, acls) and Barbican's own answers: 201 with only the ref on a
// create, a payload given without its content type 400, application/
// octet-stream needing base64, a secret or container of another project 404
// unless its ACL names the user ("Not Found. Sorry but your secret is in
// another castle.").

// A Barbican secret as the emulator keeps it.
type kmSecret struct {
	ID, Name, Type, ContentType, Algorithm, Mode string
	BitLength                                    int
	Payload                                      []byte
	ProjectID, CreatorID                         string
	Created                                      time.Time
	ReadUsers                                    []string
	ProjectAccess                                bool
}

type kmSecretRef struct {
	Name      string `json:"name"`
	SecretRef string `json:"secret_ref"`
}

type kmContainer struct {
	ID, Name, Type       string
	Refs                 []kmSecretRef
	ProjectID, CreatorID string
	Created              time.Time
	ReadUsers            []string
	ProjectAccess        bool
}

const kmPrefix = "/key-manager/v1"

func barbicanError(w http.ResponseWriter, code int, desc string) {
	writeJSON(w, code, map[string]any{"code": code, "title": http.StatusText(code), "description": desc})
}

// caller is the token's user and project (the route is authorized already).
func (e *Emulator) caller(r *http.Request) (user, project string) {
	t := e.tokens[r.Header.Get("X-Auth-Token")]
	return t.UserID, t.ProjectID
}

// requester is who calls: a token's user and project, and whether the token
// is delegated (an application credential's).
type requester struct {
	user, project string
	delegated     bool
}

func (e *Emulator) requester(r *http.Request) requester {
	t := e.tokens[r.Header.Get("X-Auth-Token")]
	return requester{user: t.UserID, project: t.ProjectID, delegated: t.AppCredID != ""}
}

// readable: the owner's project, or a user its ACL names.
func readable(project, owner, user string, projectAccess bool, users []string) bool {
	return project == owner && projectAccess || slices.Contains(users, user)
}

func (e *Emulator) routeKeyManager() {
	// The version document (Barbican's root answers 300 Multiple Choices).
	e.handlePublic("GET /key-manager/{$}", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusMultipleChoices, map[string]any{"versions": map[string]any{"values": []any{map[string]any{
			"id": "v1", "status": "stable",
			"links":       []any{map[string]string{"rel": "self", "href": baseURL(r) + kmPrefix + "/"}},
			"media-types": []any{map[string]string{"base": "application/json", "type": "application/vnd.openstack.key-manager-v1+json"}},
		}}}})
	})
	e.handle("POST "+kmPrefix+"/secrets", e.createSecret)
	e.handle("GET "+kmPrefix+"/secrets", e.listSecrets)
	e.handle("GET "+kmPrefix+"/secrets/{id}", e.getSecret)
	e.handle("GET "+kmPrefix+"/secrets/{id}/payload", e.getSecretPayload)
	e.handle("DELETE "+kmPrefix+"/secrets/{id}", e.deleteSecret)
	e.handle("PUT "+kmPrefix+"/secrets/{id}/acl", func(w http.ResponseWriter, r *http.Request) { e.putACL(w, r, "secrets") })
	e.handle("POST "+kmPrefix+"/containers", e.createContainer)
	e.handle("GET "+kmPrefix+"/containers", e.listContainers)
	e.handle("GET "+kmPrefix+"/containers/{id}", e.getContainer)
	e.handle("DELETE "+kmPrefix+"/containers/{id}", e.deleteContainer)
	e.handle("PUT "+kmPrefix+"/containers/{id}/acl", func(w http.ResponseWriter, r *http.Request) { e.putACL(w, r, "containers") })
}

func (e *Emulator) createSecret(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Name                   string `json:"name"`
		Payload                string `json:"payload"`
		PayloadContentType     string `json:"payload_content_type"`
		PayloadContentEncoding string `json:"payload_content_encoding"`
		SecretType             string `json:"secret_type"`
		Algorithm              string `json:"algorithm"`
		BitLength              int    `json:"bit_length"`
		Mode                   string `json:"mode"`
	}
	if err := decodeJSON(r, &b); err != nil {
		barbicanError(w, 400, "Provided object does not match schema 'Secret': "+err.Error())
		return
	}
	if b.SecretType == "" {
		b.SecretType = "opaque"
	}
	switch b.SecretType {
	case "symmetric", "public", "private", "passphrase", "certificate", "opaque":
	default:
		barbicanError(w, 400, fmt.Sprintf("Provided object does not match schema 'Secret': %q is not one of the secret types. Invalid property: 'secret_type'", b.SecretType))
		return
	}
	payload := []byte(b.Payload)
	switch {
	case b.Payload != "" && b.PayloadContentType == "":
		barbicanError(w, 400, "Provided object does not match schema 'Secret': If 'payload' is supplied, 'payload_content_type' must also be supplied. Invalid property: 'payload_content_type'")
		return
	case b.PayloadContentType == "application/octet-stream":
		if b.PayloadContentEncoding != "base64" {
			barbicanError(w, 400, "Provided object does not match schema 'Secret': payload_content_encoding must be base64 for application/octet-stream. Invalid property: 'payload_content_encoding'")
			return
		}
		raw, err := base64.StdEncoding.DecodeString(b.Payload)
		if err != nil {
			barbicanError(w, 400, "Problem decoding payload")
			return
		}
		payload = raw
	case b.PayloadContentType != "" && !strings.HasPrefix(b.PayloadContentType, "text/plain"):
		barbicanError(w, 400, fmt.Sprintf("Provided object does not match schema 'Secret': payload_content_type %q is not supported. Invalid property: 'payload_content_type'", b.PayloadContentType))
		return
	}
	now := e.lock()
	defer e.mu.Unlock()
	user, project := e.caller(r)
	s := &kmSecret{ID: e.newID(), Name: b.Name, Type: b.SecretType, ContentType: strings.Split(b.PayloadContentType, ";")[0],
		Algorithm: b.Algorithm, BitLength: b.BitLength, Mode: b.Mode, Payload: payload,
		ProjectID: project, CreatorID: user, Created: now, ProjectAccess: true}
	e.kmSecrets[s.ID] = s
	writeJSON(w, http.StatusCreated, map[string]any{"secret_ref": baseURL(r) + kmPrefix + "/secrets/" + s.ID})
}

func (e *Emulator) secretView(r *http.Request, s *kmSecret) map[string]any {
	v := map[string]any{
		"secret_ref": baseURL(r) + kmPrefix + "/secrets/" + s.ID, "name": s.Name, "status": "ACTIVE",
		"secret_type": s.Type, "algorithm": nullable(s.Algorithm), "mode": nullable(s.Mode),
		"created": s.Created.UTC().Format("2006-01-02T15:04:05"), "updated": s.Created.UTC().Format("2006-01-02T15:04:05"),
		"expiration": nil, "creator_id": s.CreatorID,
	}
	if s.BitLength > 0 {
		v["bit_length"] = s.BitLength
	} else {
		v["bit_length"] = nil
	}
	if s.ContentType != "" {
		v["content_types"] = map[string]string{"default": s.ContentType}
	}
	return v
}

// visibleSecret is the secret when the caller may read it.
func (e *Emulator) visibleSecret(w http.ResponseWriter, r *http.Request) (*kmSecret, bool) {
	user, project := e.caller(r)
	s, ok := e.kmSecrets[r.PathValue("id")]
	if !ok || !readable(project, s.ProjectID, user, s.ProjectAccess, s.ReadUsers) {
		barbicanError(w, http.StatusNotFound, "Not Found. Sorry but your secret is in another castle.")
		return nil, false
	}
	return s, true
}

func (e *Emulator) getSecret(w http.ResponseWriter, r *http.Request) {
	e.lock()
	defer e.mu.Unlock()
	if s, ok := e.visibleSecret(w, r); ok {
		writeJSON(w, http.StatusOK, e.secretView(r, s))
	}
}

func (e *Emulator) getSecretPayload(w http.ResponseWriter, r *http.Request) {
	e.lock()
	defer e.mu.Unlock()
	s, ok := e.visibleSecret(w, r)
	if !ok {
		return
	}
	if len(s.Payload) == 0 {
		barbicanError(w, http.StatusNotFound, "Not Found. Sorry but your secret has no payload.")
		return
	}
	w.Header().Set("Content-Type", s.ContentType)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(s.Payload)
}

func (e *Emulator) deleteSecret(w http.ResponseWriter, r *http.Request) {
	e.lock()
	defer e.mu.Unlock()
	user, project := e.caller(r)
	s, ok := e.kmSecrets[r.PathValue("id")]
	if !ok || s.ProjectID != project && !slices.Contains(s.ReadUsers, user) {
		barbicanError(w, http.StatusNotFound, "Not Found. Sorry but your secret is in another castle.")
		return
	}
	if s.ProjectID != project {
		barbicanError(w, http.StatusForbidden, "Forbidden: a user named by the ACL may read the secret, not delete it.")
		return
	}
	delete(e.kmSecrets, s.ID)
	w.WriteHeader(http.StatusNoContent)
}

// listSecrets: the project's secrets, newest first, filtered by name, paged
// by limit (default 10) and offset.
func (e *Emulator) listSecrets(w http.ResponseWriter, r *http.Request) {
	serveBarbicanList(e, w, r, "secrets", e.kmSecrets, func(s *kmSecret, project string, q url.Values) bool {
		return s.ProjectID == project && (q.Get("name") == "" || s.Name == q.Get("name"))
	}, func(s *kmSecret) (time.Time, string) { return s.Created, s.ID }, e.secretView)
}

// writeBarbicanPage answers a listing as Barbican does: newest first, paged
// by limit (default 10, at most 100) and offset, with the total and the next
// page's URL.
func writeBarbicanPage[T any](w http.ResponseWriter, r *http.Request, kind string, all []T, key func(T) (time.Time, string), view func(T) any) {
	limit, offset := pageOf(r.URL.Query())
	sort.Slice(all, func(i, j int) bool {
		ci, idi := key(all[i])
		cj, idj := key(all[j])
		if !ci.Equal(cj) {
			return ci.After(cj)
		}
		return idi < idj
	})
	page := []any{}
	for i := offset; i < len(all) && i < offset+limit; i++ {
		page = append(page, view(all[i]))
	}
	out := map[string]any{kind: page, "total": len(all)}
	if offset+limit < len(all) {
		out["next"] = fmt.Sprintf("%s%s/%s?limit=%d&offset=%d", baseURL(r), kmPrefix, kind, limit, offset+limit)
	}
	writeJSON(w, http.StatusOK, out)
}

// createContainer: a certificate container names a "certificate" secret and
// may name "private_key", "private_key_passphrase" and "intermediates"; every
// secret named must be one the caller may read.
func (e *Emulator) createContainer(w http.ResponseWriter, r *http.Request) {
	var b struct {
		Name       string        `json:"name"`
		Type       string        `json:"type"`
		SecretRefs []kmSecretRef `json:"secret_refs"`
	}
	if err := decodeJSON(r, &b); err != nil {
		barbicanError(w, 400, "Provided object does not match schema 'Container': "+err.Error())
		return
	}
	switch b.Type {
	case "generic", "rsa":
	case "certificate":
		names := map[string]bool{}
		for _, ref := range b.SecretRefs {
			switch ref.Name {
			case "certificate", "private_key", "private_key_passphrase", "intermediates":
				names[ref.Name] = true
			default:
				barbicanError(w, 400, fmt.Sprintf("Provided object does not match schema 'Container': %q is not a secret name of a certificate container. Invalid property: 'secret_refs'", ref.Name))
				return
			}
		}
		if !names["certificate"] {
			barbicanError(w, 400, "Provided object does not match schema 'Container': a certificate container needs a 'certificate' secret. Invalid property: 'secret_refs'")
			return
		}
	default:
		barbicanError(w, 400, fmt.Sprintf("Provided object does not match schema 'Container': %q is not one of ['generic', 'rsa', 'certificate']. Invalid property: 'type'", b.Type))
		return
	}
	now := e.lock()
	defer e.mu.Unlock()
	user, project := e.caller(r)
	for _, ref := range b.SecretRefs {
		id := ref.SecretRef[strings.LastIndex(ref.SecretRef, "/")+1:]
		s, ok := e.kmSecrets[id]
		if !ok || !readable(project, s.ProjectID, user, s.ProjectAccess, s.ReadUsers) {
			barbicanError(w, http.StatusNotFound, "Secret provided for '"+ref.Name+"' doesn't exist.")
			return
		}
	}
	c := &kmContainer{ID: e.newID(), Name: b.Name, Type: b.Type, Refs: slices.Clone(b.SecretRefs),
		ProjectID: project, CreatorID: user, Created: now, ProjectAccess: true}
	e.kmContainers[c.ID] = c
	writeJSON(w, http.StatusCreated, map[string]any{"container_ref": baseURL(r) + kmPrefix + "/containers/" + c.ID})
}

func (e *Emulator) getContainer(w http.ResponseWriter, r *http.Request) {
	e.lock()
	defer e.mu.Unlock()
	user, project := e.caller(r)
	c, ok := e.kmContainers[r.PathValue("id")]
	if !ok || !readable(project, c.ProjectID, user, c.ProjectAccess, c.ReadUsers) {
		barbicanError(w, http.StatusNotFound, "Not Found. Sorry but your container is in another castle.")
		return
	}
	writeJSON(w, http.StatusOK, e.containerView(r, c))
}

func (e *Emulator) containerView(r *http.Request, c *kmContainer) map[string]any {
	return map[string]any{
		"container_ref": baseURL(r) + kmPrefix + "/containers/" + c.ID, "name": c.Name, "type": c.Type, "status": "ACTIVE",
		"secret_refs": nonNil(c.Refs), "creator_id": c.CreatorID,
		"created": c.Created.UTC().Format("2006-01-02T15:04:05"), "updated": c.Created.UTC().Format("2006-01-02T15:04:05"),
		"consumers": []any{},
	}
}

func (e *Emulator) deleteContainer(w http.ResponseWriter, r *http.Request) {
	e.lock()
	defer e.mu.Unlock()
	_, project := e.caller(r)
	c, ok := e.kmContainers[r.PathValue("id")]
	if !ok || c.ProjectID != project {
		barbicanError(w, http.StatusNotFound, "Not Found. Sorry but your container is in another castle.")
		return
	}
	delete(e.kmContainers, c.ID) // its secrets stay: they are deleted on their own
	w.WriteHeader(http.StatusNoContent)
}

// putACL replaces the read ACL of a secret or container of the caller's
// project: {"read": {"users": [...], "project-access": bool}}.
func (e *Emulator) putACL(w http.ResponseWriter, r *http.Request, kind string) {
	var b struct {
		Read *struct {
			Users         []string `json:"users"`
			ProjectAccess *bool    `json:"project-access"`
		} `json:"read"`
	}
	if err := decodeJSON(r, &b); err != nil || b.Read == nil {
		barbicanError(w, 400, "Provided object does not match schema 'ACL': a 'read' operation is required")
		return
	}
	e.lock()
	defer e.mu.Unlock()
	_, project := e.caller(r)
	id := r.PathValue("id")
	users, access := slices.Clone(b.Read.Users), deref(b.Read.ProjectAccess, true)
	switch kind {
	case "secrets":
		s, ok := e.kmSecrets[id]
		if !ok || s.ProjectID != project {
			barbicanError(w, http.StatusNotFound, "Not Found. Sorry but your secret is in another castle.")
			return
		}
		s.ReadUsers, s.ProjectAccess = users, access
	default:
		c, ok := e.kmContainers[id]
		if !ok || c.ProjectID != project {
			barbicanError(w, http.StatusNotFound, "Not Found. Sorry but your container is in another castle.")
			return
		}
		c.ReadUsers, c.ProjectAccess = users, access
	}
	writeJSON(w, http.StatusOK, map[string]string{"acl_ref": baseURL(r) + kmPrefix + "/" + kind + "/" + id + "/acl"})
}

// OctaviaUserID is the user Octavia reads certificates as: the one its API
// adds to the read ACL of a listener's certificate.
const OctaviaUserID = "0c7a1e5d9b3f4d2a8e6c1b0f3a9d7e52"

// checkTLSRef checks a listener's certificate reference as Octavia's API does
// (octavia/api/v2/controllers/base.py _validate_tls_refs, with
// cert_manager = barbican_cert_manager and barbican_auth = barbican_acl_auth):
// with the caller's token it adds Octavia's user to the read ACL of the
// container and its secrets, or of the secret, then reads them as that user.
// A reference that is not there, or that the caller may not read, is 400
// "Could not retrieve certificate: ['<ref>']"; a container's certificate that
// is not PEM likewise. A secret (not a container) must hold a PKCS12 bundle,
// which the emulator takes as any binary payload.
//
// Octavia sets the ACL with a token it makes from the caller's: Keystone
// refuses that for a token of an application credential ("Using a delegated
// token to create another token is not allowed", measured with Octavia 11 and
// Keystone 22 of Zed), so every reference of such a caller is refused
// likewise. Call with mu held.
func (e *Emulator) checkTLSRef(ref string, who requester) *apiErr {
	bad := errf(400, "", "Could not retrieve certificate: ['%s']", ref)
	if who.delegated {
		return bad
	}
	user, project := who.user, who.project
	parts := strings.Split(strings.TrimRight(ref, "/"), "/")
	if len(parts) < 2 {
		return bad
	}
	kind, id := parts[len(parts)-2], parts[len(parts)-1]
	grant := func(users []string) []string {
		if !slices.Contains(users, OctaviaUserID) {
			users = append(users, OctaviaUserID)
		}
		return users
	}
	secret := func(ref string) (*kmSecret, bool) {
		s, ok := e.kmSecrets[ref[strings.LastIndex(ref, "/")+1:]]
		return s, ok && readable(project, s.ProjectID, user, s.ProjectAccess, s.ReadUsers)
	}
	switch kind {
	case "containers":
		c, ok := e.kmContainers[id]
		if !ok || !readable(project, c.ProjectID, user, c.ProjectAccess, c.ReadUsers) || c.Type != "certificate" {
			return bad
		}
		var found []*kmSecret
		for _, r := range c.Refs {
			s, ok := secret(r.SecretRef)
			if !ok {
				return bad
			}
			if r.Name == "certificate" {
				if b, _ := pem.Decode(s.Payload); b == nil || b.Type != "CERTIFICATE" {
					return bad
				}
			}
			found = append(found, s)
		}
		if c.ProjectID == project {
			c.ReadUsers = grant(c.ReadUsers)
			for _, s := range found {
				if s.ProjectID == project {
					s.ReadUsers = grant(s.ReadUsers)
				}
			}
		}
	case "secrets":
		s, ok := e.kmSecrets[id]
		if !ok || !readable(project, s.ProjectID, user, s.ProjectAccess, s.ReadUsers) {
			return bad
		}
		if len(s.Payload) == 0 || s.ContentType != "application/octet-stream" {
			return errf(400, "", "The PKCS12 bundle is unreadable. Please check the PKCS12 bundle validity. In addition, make sure it does not require a pass phrase. Error: %s", "not a PKCS12 bundle")
		}
		if s.ProjectID == project {
			s.ReadUsers = grant(s.ReadUsers)
		}
	default:
		return bad
	}
	return nil
}

// listContainers: the project's containers, newest first, filtered by name
// and type, paged by limit (default 10) and offset.
func (e *Emulator) listContainers(w http.ResponseWriter, r *http.Request) {
	serveBarbicanList(e, w, r, "containers", e.kmContainers, func(c *kmContainer, project string, q url.Values) bool {
		return c.ProjectID == project && (q.Get("name") == "" || c.Name == q.Get("name")) && (q.Get("type") == "" || c.Type == q.Get("type"))
	}, func(c *kmContainer) (time.Time, string) { return c.Created, c.ID }, e.containerView)
}

// serveBarbicanList answers a list of kind: the objects of m that keep
// accepts given the caller's project (Barbican lists only the caller's
// project's) and the query, newest first, paged (writeBarbicanPage).
func serveBarbicanList[T, V any](e *Emulator, w http.ResponseWriter, r *http.Request, kind string, m map[string]T,
	keep func(o T, project string, q url.Values) bool, key func(T) (time.Time, string), view func(*http.Request, T) V) {
	q := r.URL.Query()
	e.lock()
	defer e.mu.Unlock()
	_, project := e.caller(r)
	var all []T
	for _, o := range m {
		if keep(o, project, q) {
			all = append(all, o)
		}
	}
	writeBarbicanPage(w, r, kind, all, key, func(o T) any { return view(r, o) })
}

// pageOf reads Barbican's limit (default 10, at most 100) and offset.
func pageOf(q url.Values) (limit, offset int) {
	limit = 10
	if v := q.Get("limit"); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 {
			limit = min(n, 100)
		}
	}
	if v := q.Get("offset"); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 {
			offset = n
		}
	}
	return limit, offset
}

// StoreCertificate stores a certificate and its key (PEM) in Barbican as the
// fixture's user, in a certificate container named name, as a person does
// before naming it in default-tls-container-ref; it returns the container's
// reference (on URL()).
func (e *Emulator) StoreCertificate(name string, cert, key []byte) string {
	base := e.URL()
	now := e.lock()
	defer e.mu.Unlock()
	var refs []kmSecretRef
	for _, p := range []struct {
		name, kind string
		payload    []byte
	}{{"certificate", "certificate", cert}, {"private_key", "private", key}} {
		s := &kmSecret{ID: e.newID(), Name: name + "-" + p.name, Type: p.kind, ContentType: "application/octet-stream",
			Payload: slices.Clone(p.payload), ProjectID: e.fx.ProjectID, CreatorID: e.fx.UserID, Created: now, ProjectAccess: true}
		e.kmSecrets[s.ID] = s
		refs = append(refs, kmSecretRef{Name: p.name, SecretRef: base + kmPrefix + "/secrets/" + s.ID})
	}
	c := &kmContainer{ID: e.newID(), Name: name, Type: "certificate", Refs: refs, ProjectID: e.fx.ProjectID,
		CreatorID: e.fx.UserID, Created: now, ProjectAccess: true}
	e.kmContainers[c.ID] = c
	return base + kmPrefix + "/containers/" + c.ID
}

// PasswordCloudConf is CloudConf with the fixture user's password in
// [Global] instead of the application credential (Octavia reads TLS
// certificates only for such a caller: see checkTLSRef).
func (e *Emulator) PasswordCloudConf() string {
	fx := e.Fixture()
	conf := e.CloudConf()
	start, end := strings.Index(conf, "[Global]"), strings.Index(conf, "\n[LoadBalancer]")
	return conf[:start] + fmt.Sprintf("[Global]\nauth-url=%s/identity/v3\nusername=%s\npassword=%s\ntenant-id=%s\ndomain-id=default\nregion=%s\n",
		e.URL(), fx.UserName, fx.Password, fx.ProjectID, e.opts.Region) + conf[end:]
}
