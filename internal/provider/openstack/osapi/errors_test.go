package osapi

import (
	"fmt"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/stretchr/testify/assert"

	"github.com/overcast-ccm/overcast/internal/outcome"
)

func TestAnOpenStackErrorIsToldInTheServicesOwnWords(t *testing.T) {
	for _, tc := range []struct {
		name, service string
		code          int
		body, want    string
		kind          error
	}{
		{"Neutron's quota", "Neutron", 409, `{"NeutronError":{"type":"OverQuota","message":"Quota exceeded for resources: ['floatingip'].","detail":""}}`,
			"Neutron answered 409 (OverQuota): Quota exceeded for resources: ['floatingip'].", outcome.ErrRefused},
		{"Octavia busy", "Octavia", 409, `{"faultcode":"Client","faultstring":"Load Balancer 1f2e is immutable and cannot be updated.","debuginfo":null}`,
			"Octavia answered 409: Load Balancer 1f2e is immutable and cannot be updated.", outcome.ErrBusy},
		{"Octavia's quota", "Octavia", 403, `{"faultcode":"Client","faultstring":"Quota has been met for resources: load_balancer","debuginfo":null}`,
			"Octavia answered 403: Quota has been met for resources: load_balancer", outcome.ErrRefused},
		{"no body to read", "Octavia", 503, `<html>Service Unavailable</html>`, "Octavia answered 503 Service Unavailable to POST http://127.0.0.1/v2/x", nil},
		{"Nova's server gone", "Nova", 404, `{"itemNotFound":{"code":404,"message":"Instance 1f2e could not be found."}}`,
			"Nova answered 404 Not Found to POST http://127.0.0.1/v2/x", outcome.ErrNotFound},
		{"Barbican's conflict", "Barbican", 409, `{"code":409,"title":"Conflict","description":"Duplicate"}`,
			"Barbican answered 409 Conflict to POST http://127.0.0.1/v2/x", outcome.ErrRefused},
		{"Keystone's refusal", "Keystone", 401, `{"error":{"code":401,"message":"The request you have made requires authentication.","title":"Unauthorized"}}`,
			"Keystone answered 401: The request you have made requires authentication.", outcome.ErrAuth},
		{"no Keystone at the auth-url", "Keystone", 404, `{"error":{"code":404,"message":"Not Found"}}`,
			"Keystone answered 404: Not Found", outcome.ErrRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := gophercloud.ErrUnexpectedResponseCode{Method: "POST", URL: "http://127.0.0.1/v2/x?token=secret", Expected: []int{201}, Actual: tc.code, Body: []byte(tc.body)}
			err := map[string]func(error) error{"Neutron": neutronErr, "Octavia": octaviaErr, "Nova": novaErr, "Barbican": barbicanErr, "Keystone": keystoneErr}[tc.service](raw)
			if tc.service == "Keystone" {
				assert.NotErrorIs(t, err, outcome.ErrNotFound, "an authentication's answer never says an object is gone")
			}
			again := octaviaErr(fmt.Errorf("doing it: %w", err))
			assert.Equal(t, "doing it: "+err.Error(), again.Error(), "an error is told once")
			if tc.want != "" {
				assert.Equal(t, tc.want, err.Error())
			}
			assert.NotContains(t, err.Error(), "secret")
			if tc.kind != nil {
				assert.ErrorIs(t, err, tc.kind)
			}
			var code gophercloud.ErrUnexpectedResponseCode
			assert.ErrorAs(t, err, &code, "the SDK's error stays in the chain")
		})
	}
}
