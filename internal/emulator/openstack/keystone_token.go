package openstack

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/overcast-ccm/overcast/internal/emulator/core"
)

// Token issue (Identity API v3 reference, "Password authentication with
// scoped authorization", "Authenticating with an Application Credential",
// "Token authentication"): POST /v3/auth/tokens answers 201 with the token
// in X-Subject-Token and its body; a failed authentication is 401 with the
// same message whatever failed.

// errUnauthorized is Keystone's 401, which does not say what failed.
var errUnauthorized = errf(http.StatusUnauthorized, "", "The request you have made requires authentication.")

// keystoneErr answers a in Keystone's format.
func keystoneErr(w http.ResponseWriter, a *apiErr) { keystoneError(w, a.code, a.msg) }

// decodeAuth reads {"auth": …}.
func decodeAuth(r *http.Request, req *authRequest) *apiErr {
	if err := decodeJSON(r, req); err != nil {
		return errf(http.StatusBadRequest, "", "%s", "Invalid request body: "+err.Error())
	}
	return nil
}

// createToken authenticates by one of the methods, scopes the token and
// stores it.
func (e *Emulator) createToken(r *http.Request, req *authRequest, now time.Time) (core.Reply, *apiErr) {
	t := &token{Issued: now, Expires: now.Add(e.opts.TokenTTL), Methods: req.Auth.Identity.Methods}
	u, aerr := e.authenticate(req, t, now)
	if aerr != nil {
		return core.Reply{}, aerr
	}
	t.UserID = u.ID
	if aerr := e.scopeToken(t, req.Auth.Scope); aerr != nil {
		return core.Reply{}, aerr
	}
	t.ID = newTokenID()
	e.pruneTokens(now)
	e.tokens[t.ID] = t
	return core.Reply{Status: http.StatusCreated, Body: e.tokenBody(t, u, baseURL(r)),
		Header: map[string]string{"X-Subject-Token": t.ID}}, nil
}

// authenticate finds the user of the request's identity method, giving t
// what the method decides (its project, an application credential's, a
// renewed token's expiry).
func (e *Emulator) authenticate(req *authRequest, t *token, now time.Time) (*user, *apiErr) {
	id := req.Auth.Identity
	switch {
	case has(id.Methods, "application_credential") && id.ApplicationCredential != nil:
		return e.authAppCred(req, t)
	case has(id.Methods, "password") && id.Password != nil:
		u := e.findUser(id.Password.User)
		if u == nil || u.Password != id.Password.User.Password {
			return nil, errUnauthorized
		}
		t.ProjectID = u.DefaultProjectID
		return u, nil
	case has(id.Methods, "token") && id.Token != nil:
		old, ok := e.tokens[id.Token.ID]
		if !ok || !now.Before(old.Expires) {
			return nil, errUnauthorized
		}
		t.ProjectID, t.Expires, t.AppCredID = old.ProjectID, old.Expires, old.AppCredID
		return e.users[old.UserID], nil
	}
	return nil, errf(http.StatusBadRequest, "", "Expecting to find identity methods password, token or application_credential.")
}

// authAppCred authenticates by an application credential (by id, or by
// name and its user), whose token is its project's and takes no scope.
func (e *Emulator) authAppCred(req *authRequest, t *token) (*user, *apiErr) {
	ac := req.Auth.Identity.ApplicationCredential
	var cred *appCred
	if ac.ID != "" {
		cred = e.appCreds[ac.ID]
	} else if ac.User != nil {
		if owner := e.findUser(*ac.User); owner != nil {
			for _, c := range e.appCreds {
				if c.Name == ac.Name && c.UserID == owner.ID {
					cred = c
				}
			}
		}
	}
	if cred == nil || cred.Secret != ac.Secret {
		return nil, errUnauthorized
	}
	if len(req.Auth.Scope) > 0 && string(req.Auth.Scope) != "null" {
		return nil, errf(http.StatusUnauthorized, "", "Application credentials cannot request a scope.")
	}
	t.AppCredID, t.ProjectID = cred.ID, cred.ProjectID
	return e.users[cred.UserID], nil
}

// scopeToken applies the request's scope: the fixture's project (by id, or
// by name in the default domain), or "unscoped"; an application
// credential's token keeps its project.
func (e *Emulator) scopeToken(t *token, scope json.RawMessage) *apiErr {
	if string(scope) == `"unscoped"` {
		t.ProjectID = ""
		return nil
	}
	if t.AppCredID != "" || len(scope) == 0 || string(scope) == "null" {
		return nil
	}
	var sc scopeRequest
	if err := json.Unmarshal(scope, &sc); err != nil {
		return errf(http.StatusBadRequest, "", "%s", "Invalid scope: "+err.Error())
	}
	if sc.Project == nil {
		return errf(http.StatusUnauthorized, "", "The emulator issues project-scoped tokens only.")
	}
	p := sc.Project
	match := p.ID == e.fx.ProjectID ||
		(p.ID == "" && p.Name == e.projectName && p.Domain != nil &&
			(p.Domain.ID == domainID || p.Domain.ID == "" && p.Domain.Name == domainName))
	if !match {
		return errUnauthorized
	}
	t.ProjectID = e.fx.ProjectID
	return nil
}

// pruneTokens drops the expired tokens once there are many.
func (e *Emulator) pruneTokens(now time.Time) {
	if len(e.tokens) <= 10000 {
		return
	}
	for k, old := range e.tokens {
		if !now.Before(old.Expires) {
			delete(e.tokens, k)
		}
	}
}
