package openstack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/overcast-ccm/overcast/internal/provider"
)

// keystone is a minimal Keystone v3 token endpoint that records what each
// authentication sent and accepts one password.
type keystone struct {
	*httptest.Server
	mu       sync.Mutex
	bodies   []map[string]any
	password string
}

func newKeystone(t *testing.T, password string) *keystone {
	k := &keystone{password: password}
	k.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/v3/auth/tokens") {
			http.NotFound(w, r)
			return
		}
		data, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(data, &body)
		k.mu.Lock()
		k.bodies = append(k.bodies, body)
		want := k.password
		k.mu.Unlock()
		if !strings.Contains(string(data), `"password":"`+want+`"`) {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":{"code":401,"message":"The request you have made requires authentication."}}`))
			return
		}
		w.Header().Set("X-Subject-Token", "tok")
		w.WriteHeader(http.StatusCreated)
		_, _ = fmt.Fprintf(w, `{"token":{"expires_at":%q,"catalog":[{"type":"compute","endpoints":[{"interface":"public","region":"RegionOne","region_id":"RegionOne","url":%q}]}]}}`,
			time.Now().Add(time.Hour).UTC().Format(time.RFC3339), k.URL+"/compute/v2.1")
	}))
	t.Cleanup(k.Close)
	return k
}

func (k *keystone) last() map[string]any {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.bodies) == 0 {
		return nil
	}
	return k.bodies[len(k.bodies)-1]
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path+".tmp", []byte(content), 0o600))
	require.NoError(t, os.Rename(path+".tmp", path)) // as a Secret volume swaps files
}

func readConf(t *testing.T, path string) Config {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	c, err := Read(f)
	require.NoError(t, err)
	require.NoError(t, c.Validate())
	return c
}

func TestCredentialsFileOverridesAndRotatesWithoutARestart(t *testing.T) {
	ks := newKeystone(t, "first")
	dir := t.TempDir()
	conf, creds := filepath.Join(dir, "cloud.conf"), filepath.Join(dir, "credentials.conf")
	writeFile(t, creds, "[Global]\npassword=first\n")
	writeFile(t, conf, fmt.Sprintf("[Global]\nauth-url=%s/v3\nusername=ccm\ntenant-id=p1\ndomain-id=default\nregion=RegionOne\ncredentials-file=%s\n", ks.URL, creds))
	cfg := readConf(t, conf)
	assert.Equal(t, "first", cfg.Global.Password, "the credentials file fills in [Global]")
	cloud, err := New(cfg)
	require.NoError(t, err)
	_, err = clientOf(cloud).ComputeClient(t.Context())
	require.NoError(t, err)

	// The password is rotated: Keystone accepts only the new one, the Secret is updated.
	ks.mu.Lock()
	ks.password = "second"
	ks.mu.Unlock()
	writeFile(t, creds, "[Global]\npassword=second\n")
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		provider.WatchConfig(stop, 20*time.Millisecond, ProviderName, cloud.cfg.path, &cloud.cfg, cloud.setGlobal)
		close(done)
	}()
	defer func() { close(stop); <-done }()
	require.Eventually(t, func() bool {
		return cloud.globals().Password == "second"
	}, 5*time.Second, 10*time.Millisecond)
	_, err = clientOf(cloud).ComputeClient(t.Context())
	require.NoError(t, err, "the next call authenticates with the new password")

	// A broken file changes nothing.
	writeFile(t, creds, "[Global]\npassword=third\nnot-a-key=1\n")
	time.Sleep(100 * time.Millisecond)
	got := cloud.globals().Password
	assert.Equal(t, "second", got, "an invalid file leaves the credentials in use")
}

func TestCredentialsFileErrorsNameTheFileAndKeepSecretsOut(t *testing.T) {
	dir := t.TempDir()
	creds := filepath.Join(dir, "credentials.conf")
	writeFile(t, creds, "[Global]\npassword=hunter2\nbogus=1\n[LoadBalancer]\nsubnet-id=x\n")
	_, err := Read(strings.NewReader("[Global]\nauth-url=http://127.0.0.1:5000/v3\nusername=u\ntenant-id=p\ncredentials-file=" + creds + "\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), creds)
	assert.Contains(t, err.Error(), "line 3: [Global] unknown key")
	assert.NotContains(t, err.Error(), "hunter2")
}

func TestTrustAuthenticatesTheTrusteeScopedToTheTrust(t *testing.T) {
	ks := newKeystone(t, "trustee-secret")
	_, body := authenticate(t, ks, fmt.Sprintf("[Global]\nauth-url=%s/v3\ntrust-id=t-123\ntrustee-id=u-456\ntrustee-password=trustee-secret\n", ks.URL))
	assert.Contains(t, body, `"OS-TRUST:trust":{"id":"t-123"}`)
	assert.Contains(t, body, `"id":"u-456"`)
}

// authenticate reads conf, checks it, builds its cloud and has it
// authenticate to ks: the cloud, and the token request ks answered last.
func authenticate(t *testing.T, ks *keystone, conf string) (*Cloud, string) {
	t.Helper()
	c, err := Read(strings.NewReader(conf))
	require.NoError(t, err)
	require.NoError(t, c.Validate())
	cloud, err := New(c)
	require.NoError(t, err)
	_, err = clientOf(cloud).ComputeClient(context.Background())
	require.NoError(t, err)
	body, _ := json.Marshal(ks.last())
	return cloud, string(body)
}

func TestCloudsYAMLIsUsedWithUseClouds(t *testing.T) {
	ks := newKeystone(t, "from-yaml")
	dir := t.TempDir()
	yaml := filepath.Join(dir, "clouds.yaml")
	writeFile(t, yaml, fmt.Sprintf(`clouds:
  mine:
    auth:
      auth_url: %s/v3
      username: yaml-user
      password: from-yaml
      project_id: p-789
      user_domain_name: Default
    region_name: RegionOne
`, ks.URL))
	cloud, body := authenticate(t, ks, "[Global]\nuse-clouds=true\nclouds-file="+yaml+"\ncloud=mine\n")
	assert.Contains(t, body, `"name":"yaml-user"`)
	assert.Equal(t, "RegionOne", clientOf(cloud).Region(), "the clouds.yaml's region_name")

	c, err := Read(strings.NewReader("[Global]\nuse-clouds=true\nclouds-file=" + yaml + "\ncloud=theirs\n"))
	require.NoError(t, err)
	err = c.Validate()
	require.Error(t, err, "a cloud that is not in the file is a config error")
	assert.NotContains(t, err.Error(), "from-yaml")
}
