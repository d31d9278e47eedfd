package cloudstack

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/overcast-ccm/overcast/internal/provider/providertest"
)

// sdk is cloudstack-go, which only the tests link (they drive the emulator
// with it, as the peer does).
const sdk = "github.com/apache/cloudstack-go"

// Only the gateway calls CloudStack: no other file imports cloudstack-go or
// net/http.
func TestOnlyTheGatewayCallsCloudStack(t *testing.T) {
	providertest.GatewayOnly(t, ".", []string{"gateway.go", "calls.go"},
		[]string{sdk, "net/http"})
}

// The provider does not link cloudstack-go, even through another package:
// the generated SDK costs every user of the binary, whatever cloud it runs,
// ~15 MB of resident memory (its pages) and 12 MB of binary. The package's
// non-test dependency closure, as the go command computes it, has no
// package of the SDK; a failure names the packages that import one.
func TestTheProviderDoesNotLinkCloudStackGo(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	listed := false
	for line := range strings.Lines(string(out)) {
		pkg, imports, _ := strings.Cut(strings.TrimSpace(line), " ")
		listed = listed || pkg == "github.com/overcast-ccm/overcast/internal/provider/cloudstack"
		if strings.HasPrefix(pkg, sdk) {
			continue // the SDK's own imports of itself
		}
		for im := range strings.FieldsSeq(imports) {
			if im == sdk || strings.HasPrefix(im, sdk+"/") {
				t.Errorf("%s imports %s: the provider's binary would link cloudstack-go", pkg, im)
			}
		}
	}
	if !listed {
		t.Fatalf("go list -deps did not list the provider:\n%s", out)
	}
}
