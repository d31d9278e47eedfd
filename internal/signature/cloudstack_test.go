package signature

import (
	"net/url"
	"testing"
)

// The server's rule on a request of its documentation's form
// (https://docs.cloudstack.apache.org/en/latest/developersguide/dev.html,
// "How to sign an API call"): the values encoded as Java does, the names
// sorted, the whole string lower-cased before it is signed.
func TestCloudStackSignsAsTheServerChecks(t *testing.T) {
	p := url.Values{"command": {"listUsers"}, "response": {"json"}, "apiKey": {"plgWJfZK4gyS3mOMTVmjUVg-X-jlWlnfaUJ9GAbBbf9EdM-kAYMmAiLqzzq1ElZLYq_u38zCm0bewzGUdP66mg"}}
	if got, want := CloudStackQuery(p), "apiKey=plgWJfZK4gyS3mOMTVmjUVg-X-jlWlnfaUJ9GAbBbf9EdM-kAYMmAiLqzzq1ElZLYq_u38zCm0bewzGUdP66mg&command=listUsers&response=json"; got != want {
		t.Fatalf("CloudStackQuery = %q, want %q", got, want)
	}
	cases := map[string]string{"a b": "a%20b", "a+b~c/d": "a%2Bb%7Ec%2Fd", "é": "%C3%A9", "x.-*_9": "x.-*_9"}
	for in, want := range cases {
		if got := javaURLEncode(in); got != want {
			t.Errorf("javaURLEncode(%q) = %q, want %q", in, got, want)
		}
	}
	p.Set("signature", CloudStack(p, "secret"))
	if !CloudStackValid(p, "secret") {
		t.Fatal("a signed request does not verify")
	}
	if CloudStackValid(p, "other") {
		t.Fatal("another secret's signature verifies")
	}
	p.Set("command", "deleteUser")
	if CloudStackValid(p, "secret") {
		t.Fatal("a changed request still verifies")
	}
}
