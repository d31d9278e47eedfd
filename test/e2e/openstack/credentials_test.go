package openstack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gopenstack "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/projects"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/roles"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/users"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/overcast-ccm/overcast/internal/devenv"
)

// TestRotatedCredentialsTakeEffectWithoutARestart: the password lives in a
// credentials-file (as a mounted Secret would hold it). The CCM starts with a
// wrong one and cannot initialise the Node; the file is fixed, and the same
// process initialises it.
func TestRotatedCredentialsTakeEffectWithoutARestart(t *testing.T) {
	conf := cloudConf(t, "OVERCAST_OS_CLOUD_PASSWORD_CONF")
	pw := regexp.MustCompile(`(?m)^password\s*=\s*(.*)$`)
	m := pw.FindStringSubmatch(conf)
	require.NotNil(t, m, "the harness's password cloud.conf has a password line")
	creds := filepath.Join(t.TempDir(), "credentials.conf")
	write := func(password string) {
		require.NoError(t, os.WriteFile(creds+".new", []byte("[Global]\npassword="+password+"\n"), 0o600))
		require.NoError(t, os.Rename(creds+".new", creds))
	}
	write("not-the-password")
	conf = pw.ReplaceAllString(conf, "credentials-file="+creds)

	name := "os-rotate-" + suffix()
	s := createServer(t, name)
	env.StartCCM(t, ccmOptions(conf))
	env.NewKubelet(t, name, s.fixedIP())
	time.Sleep(5 * time.Second)
	n, err := env.Client.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, n.Spec.ProviderID, "with a wrong password the Node cannot be initialised")

	write(m[1])
	start := time.Now()
	require.NoError(t, devenv.Poll(3*time.Minute, time.Second, func() error {
		n, err := env.Client.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if n.Spec.ProviderID != "openstack:///"+s.ID {
			return fmt.Errorf("node %s has providerID %q", name, n.Spec.ProviderID)
		}
		return nil
	}))
	t.Logf("initialised %.1fs after the credentials file was fixed", time.Since(start).Seconds())
}

// TestCredentialsOfAnotherProjectDeleteNoNode: the credentials file is
// switched to a user of another project (a Secret replaced by mistake, as in
// oci-cloud-controller-manager #57): Nova answers 404 for every server of the
// cluster. The Node deletion guard holds: no NotReady Node is deleted, one
// Warning says so; the right credentials back, the Nodes are Ready again.
func TestCredentialsOfAnotherProjectDeleteNoNode(t *testing.T) {
	ctx := t.Context()
	name := "os-elsewhere-" + suffix()
	const otherPassword = "another-project-password"
	project := aMemberOfAnotherProject(t, name, otherPassword)

	conf := cloudConf(t, "OVERCAST_OS_CLOUD_PASSWORD_CONF")
	global := regexp.MustCompile(`(?m)^(username|password|tenant-id)\s*=\s*(.*)$`)
	own := "[Global]\n"
	for _, m := range global.FindAllStringSubmatch(conf, -1) {
		own += m[1] + "=" + m[2] + "\n"
	}
	creds := filepath.Join(t.TempDir(), "credentials.conf")
	write := func(text string) {
		require.NoError(t, os.WriteFile(creds+".new", []byte(text), 0o600))
		require.NoError(t, os.Rename(creds+".new", creds))
	}
	write(own)
	conf = global.ReplaceAllString(conf, "")
	// The lifecycle controller's questions accept a listing this old (5 min
	// by default): the switch is seen within seconds.
	conf = strings.Replace(conf, "[Global]\n", "[Global]\ncredentials-file="+creds+"\nlifecycle-max-age=5s\n", 1)

	var kubelets []*devenv.Kubelet
	var names []string
	for i := range 3 {
		n := fmt.Sprintf("os-elsewhere-%d-%s", i, suffix())
		s := createServer(t, n)
		names = append(names, n)
		kubelets = append(kubelets, env.NewKubelet(t, n, s.fixedIP()))
	}
	opts := ccmOptions(conf)
	opts.Controllers = []string{"cloud-node", "cloud-node-lifecycle"}
	env.StartCCM(t, opts)
	for _, n := range names {
		waitInitialised(t, n)
	}

	write(fmt.Sprintf("[Global]\nusername=%s\npassword=%s\ntenant-id=%s\n", name, otherPassword, project))
	kubelets[0].StopHeartbeats(true)
	kubelets[1].StopHeartbeats(true)
	var msg string
	require.NoError(t, devenv.Poll(2*time.Minute, time.Second, func() error {
		evs, err := env.Client.CoreV1().Events(metav1.NamespaceDefault).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=NodeDeletionHeld"})
		if err != nil {
			return err
		}
		for _, e := range evs.Items {
			if strings.HasPrefix(e.InvolvedObject.Name, "os-elsewhere-") {
				msg = e.Message
				return nil
			}
		}
		return fmt.Errorf("no NodeDeletionHeld Warning yet")
	}))
	t.Logf("the guard said: %s", msg)
	time.Sleep(5 * time.Second) // five lifecycle periods
	for _, n := range names {
		_, err := env.Client.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
		require.NoError(t, err, "%s must not be deleted: its server is only in another project's blind spot", n)
	}

	write(own)
	for _, k := range kubelets[:2] {
		require.NoError(t, k.ResumeHeartbeats())
	}
}

// aMemberOfAnotherProject makes, as the admin, a project and a user of it,
// both named name, with password, a member of that project. It returns the
// project's ID. Both go at the test's end.
func aMemberOfAnotherProject(t *testing.T, name, password string) (projectID string) {
	ctx := t.Context()
	admin, err := gopenstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{
		IdentityEndpoint: osEnv["OS_AUTH_URL"], Username: osEnv["OVERCAST_OS_ADMIN_USERNAME"], Password: osEnv["OVERCAST_OS_ADMIN_PASSWORD"],
		TenantID: osEnv["OVERCAST_OS_ADMIN_PROJECT_ID"], DomainID: "default",
	})
	require.NoError(t, err)
	identity, err := gopenstack.NewIdentityV3(admin, gophercloud.EndpointOpts{Region: osEnv["OS_REGION_NAME"]})
	require.NoError(t, err)
	project, err := projects.Create(ctx, identity, projects.CreateOpts{Name: name, DomainID: "default"}).Extract()
	require.NoError(t, err)
	t.Cleanup(func() { _ = projects.Delete(context.Background(), identity, project.ID).ExtractErr() })
	user, err := users.Create(ctx, identity, users.CreateOpts{Name: name, DomainID: "default", Password: password, DefaultProjectID: project.ID}).Extract()
	require.NoError(t, err)
	t.Cleanup(func() { _ = users.Delete(context.Background(), identity, user.ID).ExtractErr() })
	pages, err := roles.List(identity, roles.ListOpts{Name: "member"}).AllPages(ctx)
	require.NoError(t, err)
	member, err := roles.ExtractRoles(pages)
	require.NoError(t, err)
	require.Len(t, member, 1)
	require.NoError(t, roles.Assign(ctx, identity, member[0].ID, roles.AssignOpts{UserID: user.ID, ProjectID: project.ID}).ExtractErr())
	return project.ID
}
