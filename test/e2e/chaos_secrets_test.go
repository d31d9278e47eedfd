package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/overcast-ccm/overcast/internal/cfgutil"
	"github.com/overcast-ccm/overcast/internal/cfgutil/cfgtest"
	"github.com/overcast-ccm/overcast/internal/provider"
	"github.com/overcast-ccm/overcast/test/framework"
)

// Case 8, secrets per key: every config key that holds a secret, of every
// cloud with an emulator (their lists: cfgutil.SecretKeys of the cloud's
// config type, so the next key is covered without anyone adding it here),
// written into the emulator's working config, and overcast-ccm run on it as
// a process at -v=6 and overcast doctor: the secret is in none of their
// output, nor in any Event. `make test` writes each key well formed (the
// process starts and talks to the emulator with it); `make chaos`
// (OVERCAST_CHAOS_SECRET_SHAPES=all) in every malformed shape of
// cfgtest.Shapes too. The in-process test of every shape is
// internal/clouds' TestNoCloudShowsASecretOfAMalformedConfig.
func TestChaosEverySecretKeyIsNeverShown(t *testing.T) {
	all := os.Getenv("OVERCAST_CHAOS_SECRET_SHAPES") == "all"
	ccm, err := env.CCMBinary()
	require.NoError(t, err)
	doctorBin := filepath.Join(filepath.Dir(ccm), "overcast")
	for i, cloud := range chaosClouds {
		keys := cfgutil.SecretKeys(provider.ConfigType(cloud.name))
		require.NotEmpty(t, keys, "%s has credentials, so secret keys", cloud.name)
		t.Run(cloud.name, func(t *testing.T) {
			c := cloud.start(t, 94+i)
			runs, hits := 0, 0
			for k, key := range keys {
				secret := fmt.Sprintf("Zq%dk%d-SecretMarker_%s", i, k, strings.Repeat("x", 6))
				shapes := cfgtest.Shapes(key, secret, strings.TrimRight(c.conf, "\n"))
				// Well formed, the secret is the key's value in the working
				// config: the process runs with it (refused by the cloud).
				shapes[0].File = withSecret(c.conf, key, secret)
				if !all {
					shapes = shapes[:1]
				}
				for _, shape := range shapes {
					name := strings.Join(key.Path, ".") + "/" + shape.Name
					out := secretRun(t, ccm, doctorBin, cloud.name, shape.File, shape.Name == "well formed")
					runs++
					if strings.Contains(out, secret) || strings.Contains(out, secret[:8]) {
						hits++
						t.Errorf("%s: the secret is shown (overcast-ccm at -v=6 or doctor)", name)
					}
				}
			}
			events, err := env.Client.CoreV1().Events("").List(t.Context(), metav1.ListOptions{})
			require.NoError(t, err)
			ej, err := json.Marshal(events)
			require.NoError(t, err)
			if strings.Contains(string(ej), "SecretMarker_") {
				hits++
				t.Error("a secret is in an Event")
			}
			chaosReport(t, fmt.Sprintf("| secrets per key | %s | %d | %d | %d |", cloud.name, len(keys), runs, hits))
		})
	}
}

// secretRun runs overcast-ccm at -v=6 on conf (a config that works runs
// until it has talked to the cloud for a few seconds; one that does not
// exits), then overcast doctor on it, and returns their output.
func secretRun(t *testing.T, ccm, doctorBin, cloud, conf string, works bool) string {
	t.Helper()
	p := env.StartCCMProcess(t, cloud+"-secret", framework.CCMOptions{Cloud: cloud, CloudConfig: conf,
		ExtraArgs: []string{"--v=6", "--load-balancer-drift-period=1s"}})
	wait := 10 * time.Second
	if works {
		wait = 3 * time.Second
	}
	if code := p.Wait(wait); code < 0 {
		p.Stop()
	}
	doctor, _ := framework.RunDoctor(t, doctorBin, cloud, conf, "--kubeconfig="+env.AdminKubeconfig, "--timeout=20s")
	return p.Output() + "\n" + doctor
}

// withSecret is conf with key's value secret: the key's line replaced where
// conf has it, else added at the head of its section (INI) or under its
// parent (YAML, two levels).
func withSecret(conf string, key cfgutil.SecretKey, secret string) string {
	lines := strings.Split(strings.TrimRight(conf, "\n"), "\n")
	leaf := key.Path[len(key.Path)-1]
	var head, line, indent string
	if key.INI {
		head, line = "["+key.Path[0]+"]", leaf+" = "+secret
		if len(key.Path) == 3 {
			head = fmt.Sprintf("[%s %q]", key.Path[0], key.Path[1])
		}
	} else if len(key.Path) == 2 {
		head, indent = key.Path[0]+":", "  "
		line = indent + leaf + ": " + secret
	} else {
		return conf + "\n" + strings.Join(key.Path, ".") + ": " + secret + "\n"
	}
	start := slices.Index(lines, head)
	if start < 0 {
		return strings.Join(append(lines, head, line), "\n") + "\n"
	}
	for i := start + 1; i < len(lines); i++ {
		l := lines[i]
		if key.INI && strings.HasPrefix(l, "[") || !key.INI && l != "" && !strings.HasPrefix(l, " ") {
			break // the next section, or the next top-level key
		}
		name, _, _ := strings.Cut(strings.TrimSpace(l), map[bool]string{true: "=", false: ":"}[key.INI])
		if strings.TrimSpace(name) != leaf || (!key.INI && !strings.HasPrefix(l, indent+leaf)) {
			continue
		}
		end := i + 1
		for !key.INI && end < len(lines) && strings.HasPrefix(lines[end], indent+" ") {
			end++ // a block scalar's lines
		}
		return strings.Join(slices.Concat(lines[:i], []string{line}, lines[end:]), "\n") + "\n"
	}
	return strings.Join(slices.Concat(lines[:start+1], []string{line}, lines[start+1:]), "\n") + "\n"
}
