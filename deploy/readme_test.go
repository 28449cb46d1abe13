package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/getter"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/jetgate/jetgate/deploy/image"
)

// readmeBlock is a fenced block of deploy/README.md.
type readmeBlock struct {
	line int // of its first line of text
	lang string
	text string
}

func readmeBlocks(t *testing.T) []readmeBlock {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var out []readmeBlock
	for i := 0; i < len(lines); i++ {
		lang, ok := strings.CutPrefix(lines[i], "```")
		if !ok {
			continue
		}
		end := i + 1
		for end < len(lines) && lines[end] != "```" {
			if strings.HasPrefix(lines[end], "```") {
				t.Fatalf("README.md:%d: a fence within a block", end+1)
			}
			end++
		}
		if end == len(lines) {
			t.Fatalf("README.md:%d: a fence that does not close", i+1)
		}
		out = append(out, readmeBlock{line: i + 2, lang: lang, text: strings.Join(lines[i+1:end], "\n")})
		i = end
	}
	return out
}

// readmeFile names a yaml block that is a file: its first line is "# PATH".
var readmeFile = regexp.MustCompile(`^# (\S+\.yaml)\n`)

// placeholders are the README's <…> and what the test puts in their place.
var placeholders = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`<tag>`), "0.1.0"},
	{regexp.MustCompile(`<sha256 of [^>]+>`), strings.Repeat("ab", 32)},
}

func fillIn(t *testing.T, where, s string) string {
	t.Helper()
	for _, p := range placeholders {
		s = p.re.ReplaceAllString(s, p.with)
	}
	if m := regexp.MustCompile(`<[^>]*>`).FindString(s); m != "" {
		t.Fatalf("%s: placeholder %s: the test knows no value for it", where, m)
	}
	return s
}

// readmeCommand is one command line of an sh block, split as the shell
// would.
type readmeCommand struct {
	where string
	words []string
}

func (c readmeCommand) String() string { return strings.Join(c.words, " ") }

// commands splits the README's sh blocks into commands: continued lines
// joined, comments dropped, quotes removed, $PWD kept for the caller.
func commands(t *testing.T, blocks []readmeBlock) []readmeCommand {
	t.Helper()
	var out []readmeCommand
	for _, b := range blocks {
		if b.lang != "sh" {
			continue
		}
		text := strings.ReplaceAll(b.text, "\\\n", " ")
		for i, line := range strings.Split(text, "\n") {
			words, err := shellWords(line)
			if err != nil {
				t.Fatalf("README.md:%d: %v", b.line+i, err)
			}
			if len(words) > 0 {
				out = append(out, readmeCommand{where: fmt.Sprintf("README.md:%d", b.line+i), words: words})
			}
		}
	}
	return out
}

// shellWords splits a line into words: single and double quotes, a # that
// starts a word begins a comment.
func shellWords(line string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words, inWord = append(words, w.String()), false
				w.Reset()
			}
		case c == '#' && !inWord:
			return words, nil
		case c == '\'' || c == '"':
			end := strings.IndexByte(line[i+1:], c)
			if end < 0 {
				return nil, fmt.Errorf("unclosed %c in %q", c, line)
			}
			w.WriteString(line[i+1 : i+1+end])
			i += end + 1
			inWord = true
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

// notRun are the README's commands the test does not run, and why.
var notRun = map[string]string{
	"scripts/image":          "image/ builds the image (TestSameCommitSameImage)",
	"docker load":            "no container runtime here",
	"podman load":            "no container runtime here",
	"docker buildx":          "no Docker here",
	"helm repo":              "no network here",
	"kubectl exec":           "no cluster here",
	"head -c":                "makes a random key",
	"helm install nats":      "the NATS chart is not here (README: rendered by hand)",
	"kubectl rollout":        "no cluster here",
	"kubectl create secret":  "the test records the Secret's name",
	"helm lint":              "run",
	"helm install jetgate":   "run",
	"helm upgrade --install": "run",
	"helm template":          "run",
	"docker run":             "run",
}

// kind is the first words of a command that notRun knows, "" if none.
func (c readmeCommand) kind() string {
	words := slices.Clone(c.words)
	// kubectl's namespace may come first.
	if len(words) > 3 && words[0] == "kubectl" && words[1] == "-n" {
		words = append(words[:1], words[3:]...)
	}
	for n := min(3, len(words)); n > 0; n-- {
		k := strings.Join(words[:n], " ")
		if _, ok := notRun[k]; ok {
			return k
		}
	}
	return ""
}

// helmRun is a helm command of the README's, taken apart.
type helmRun struct {
	verb, release, chart, namespace, kubeVersion string
	valueFiles, sets, stringSets                 []string
}

func parseHelm(c readmeCommand) (helmRun, error) {
	h := helmRun{verb: c.words[1], namespace: "default"}
	var args []string
	for i := 2; i < len(c.words); i++ {
		w := c.words[i]
		next := func() (string, error) {
			if i+1 == len(c.words) {
				return "", fmt.Errorf("%s without a value", w)
			}
			i++
			return c.words[i], nil
		}
		var err error
		switch w {
		case "-n", "--namespace":
			h.namespace, err = next()
		case "-f", "--values":
			var f string
			f, err = next()
			h.valueFiles = append(h.valueFiles, f)
		case "--set":
			var s string
			s, err = next()
			h.sets = append(h.sets, s)
		case "--set-string":
			var s string
			s, err = next()
			h.stringSets = append(h.stringSets, s)
		case "--kube-version":
			h.kubeVersion, err = next()
		case "--install", "--create-namespace":
		default:
			if strings.HasPrefix(w, "-") {
				return h, fmt.Errorf("flag %s: the test does not know it", w)
			}
			args = append(args, w)
		}
		if err != nil {
			return h, err
		}
	}
	if h.verb == "lint" {
		args = append([]string{""}, args...)
	}
	if len(args) != 2 {
		return h, fmt.Errorf("want a release and a chart, have %q", args)
	}
	h.release, h.chart = args[0], args[1]
	return h, nil
}

// The README's commands run as written: helm install, upgrade, template
// and lint of the chart through Helm's own packages, with the values files
// of its yaml blocks; docker run's jetgate arguments through jetgate
// check-config. No Secret the chart makes bears the name of one that a
// kubectl line makes, and every Secret the pods and the ServiceMonitor
// read is made by one or the other.
func TestREADMECommands(t *testing.T) {
	blocks := readmeBlocks(t)
	dir := t.TempDir()
	files := map[string]bool{}
	for _, b := range blocks {
		if b.lang != "yaml" {
			continue
		}
		var v any
		if err := yaml.Unmarshal([]byte(fillIn(t, fmt.Sprintf("README.md:%d", b.line), b.text)), &v); err != nil {
			t.Errorf("README.md:%d: %v", b.line, err)
		}
		if m := readmeFile.FindStringSubmatch(b.text + "\n"); m != nil {
			path := filepath.Join(dir, m[1])
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(fillIn(t, m[1], b.text)), 0o600); err != nil {
				t.Fatal(err)
			}
			files[m[1]] = true
		}
	}

	theirs := map[string]string{} // namespace/name of the Secrets kubectl makes, and where
	ours := map[string]string{}   // of those the chart makes
	read := map[string]string{}   // of those the pods and the ServiceMonitor read
	ran := map[string]int{}
	for _, c := range commands(t, blocks) {
		kind := c.kind()
		switch kind {
		case "":
			t.Errorf("%s: %s: the test knows no such command: run it, or say in notRun why not", c.where, c)
		case "kubectl create secret":
			i := slices.Index(c.words, "generic")
			if i < 0 || i+1 == len(c.words) {
				t.Fatalf("%s: %s: no generic Secret's name", c.where, c)
			}
			theirs[namespaceOf(c.words)+"/"+c.words[i+1]] = c.where
		case "helm install nats":
			h, err := parseHelm(c)
			if err != nil {
				t.Fatalf("%s: %v", c.where, err)
			}
			for _, f := range h.valueFiles {
				if !files[f] {
					t.Errorf("%s: values file %s is in no yaml block", c.where, f)
				}
			}
		case "helm install jetgate", "helm upgrade --install", "helm template", "helm lint":
			ran[kind]++
			h, err := parseHelm(c.filledIn(t))
			if err != nil {
				t.Fatalf("%s: %v", c.where, err)
			}
			o, err := runHelm(h, dir)
			if err != nil {
				t.Errorf("%s: helm %s: %v", c.where, h.verb, err)
				continue
			}
			if o != nil {
				o.secretsMadeAndRead(h.namespace, c.where, ours, read)
				checkPodConfig(t, c.where, o)
			}
			if h.verb == "template" {
				h.kubeVersion = ""
				if _, err := runHelm(h, dir); err == nil || !strings.Contains(err.Error(), "kubeVersion") {
					t.Errorf("%s: without --kube-version, helm template renders (%v): the README need not say it", c.where, err)
				}
			}
		case "docker run":
			ran[kind]++
			checkDockerRun(t, c.filledIn(t), dir)
		}
	}
	for k, n := range map[string]int{"helm install jetgate": 1, "helm upgrade --install": 1, "helm template": 1, "helm lint": 1, "docker run": 2} {
		if ran[k] < n {
			t.Errorf("the README has %d %q lines; the test expects %d", ran[k], k, n)
		}
	}
	for s, at := range ours {
		if where, ok := theirs[s]; ok {
			t.Errorf("Secret %s: the chart makes it (%s), and so does %s", s, at, where)
		}
	}
	for s, at := range read {
		_, mine := ours[s]
		_, yours := theirs[s]
		if !mine && !yours {
			t.Errorf("Secret %s, read by the objects of %s, is made neither by the chart nor by the README", s, at)
		}
	}
}

func namespaceOf(words []string) string {
	for i, w := range words {
		if (w == "-n" || w == "--namespace") && i+1 < len(words) {
			return words[i+1]
		}
	}
	return "default"
}

// filledIn is c with its placeholders filled in.
func (c readmeCommand) filledIn(t *testing.T) readmeCommand {
	t.Helper()
	words := make([]string, len(c.words))
	for i, w := range c.words {
		words[i] = fillIn(t, c.where, w)
	}
	return readmeCommand{where: c.where, words: words}
}

// runHelm runs a helm line of the README as its CLI would: install and
// upgrade as client-only dry runs against the chart's oldest Kubernetes,
// template against the --kube-version given (Helm's default otherwise),
// lint as it lints. It answers the objects rendered; none for lint.
func runHelm(h helmRun, dir string) (*objects, error) {
	chart, ok := strings.CutPrefix(h.chart, "deploy/")
	if !ok || chart != chartDir {
		return nil, fmt.Errorf("chart %s; want deploy/%s", h.chart, chartDir)
	}
	opts := values.Options{Values: h.sets, StringValues: h.stringSets}
	for _, f := range h.valueFiles {
		opts.ValueFiles = append(opts.ValueFiles, filepath.Join(dir, f))
	}
	vals, err := opts.MergeValues(getter.Providers{})
	if err != nil {
		return nil, err
	}
	if h.verb == "lint" {
		if res := action.NewLint().Run([]string{chart}, vals); len(res.Errors) > 0 {
			return nil, fmt.Errorf("%v", res.Errors)
		}
		return nil, nil
	}
	chrt, err := loader.Load(chart)
	if err != nil {
		return nil, err
	}
	install := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	install.ClientOnly, install.DryRun, install.ReleaseName, install.Namespace = true, true, h.release, h.namespace
	kubeVersion := h.kubeVersion
	if h.verb != "template" {
		kubeVersion = "1.30.0" // the cluster's: at least the chart's kubeVersion
	}
	if kubeVersion != "" {
		if install.KubeVersion, err = chartutil.ParseKubeVersion(kubeVersion); err != nil {
			return nil, err
		}
	}
	rel, err := install.Run(chrt, vals)
	if err != nil {
		return nil, err
	}
	o := &objects{secrets: map[string]*corev1.Secret{}}
	if err := o.addAll(rel.Manifest); err != nil {
		return nil, err
	}
	if o.deployment == nil {
		return nil, fmt.Errorf("no Deployment")
	}
	return o, nil
}

// secretsMadeAndRead records, as namespace/name, the Secrets o makes and
// those its pods and its ServiceMonitor read.
func (o *objects) secretsMadeAndRead(ns, where string, made, read map[string]string) {
	for name := range o.secrets {
		made[ns+"/"+name] = where
	}
	pod := o.deployment.Spec.Template.Spec
	for _, v := range pod.Volumes {
		if v.Secret != nil {
			read[ns+"/"+v.Secret.SecretName] = where
		}
	}
	for _, c := range pod.Containers {
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				read[ns+"/"+e.ValueFrom.SecretKeyRef.Name] = where
			}
		}
	}
	if o.monitor != nil {
		for _, e := range o.monitor.Spec.Endpoints {
			if e.Authorization != nil {
				read[ns+"/"+e.Authorization.Credentials.Name] = where
			}
		}
	}
}

// checkDockerRun gives the jetgate arguments of a docker run line, with the
// image's environment and its mounts' files, to jetgate check-config,
// which reads the configuration as a start would and connects to nothing.
func checkDockerRun(t *testing.T, c readmeCommand, dir string) {
	t.Helper()
	words := c.words[2:]
	mounts := map[string]string{} // in the container → here
	for len(words) > 0 && strings.HasPrefix(words[0], "-") {
		switch words[0] {
		case "--rm", "-d", "-it":
			words = words[1:]
		case "-p", "-e", "--name":
			words = words[2:]
		case "-v":
			from, to, _ := strings.Cut(strings.TrimSuffix(words[1], ":ro"), ":")
			mounts[to] = filepath.Join(dir, strings.TrimPrefix(strings.TrimPrefix(from, "$PWD"), "/"))
			words = words[2:]
		default:
			t.Fatalf("%s: docker run %s: the test does not know it", c.where, words[0])
		}
	}
	if len(words) == 0 || !strings.HasPrefix(words[0], "jetgate:") {
		t.Fatalf("%s: no jetgate image in %s", c.where, c)
	}
	flags := jetgateFlags(t)
	for _, a := range words[1:] {
		if name, ok := strings.CutPrefix(a, "--"); ok && !flags[strings.SplitN(name, "=", 2)[0]] {
			t.Errorf("%s: jetgate has no flag %s", c.where, a)
		}
	}
	if !slices.Contains(words, "--config") {
		return // the flags alone: image/ runs them (TestImageServesAgainstNATS)
	}
	args := []string{"check-config"}
	for _, a := range words[1:] {
		for to, here := range mounts {
			a = strings.ReplaceAll(a, to, here)
		}
		args = append(args, a)
	}
	cmd := exec.Command(mustBin(t), args...)
	cmd.Env, cmd.Dir = append(environ(), image.Env...), t.TempDir()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("%s: jetgate %s: %v\n%s", c.where, strings.Join(args, " "), err, out)
		return
	}
	if i := slices.Index(words, "--nats-url"); i > 0 && !strings.Contains(string(out), "url: "+words[i+1]) {
		t.Errorf("%s: check-config does not take the NATS URL %s:\n%s", c.where, words[i+1], out)
	}
}

// checkPodConfig gives the configuration file and the arguments the chart
// gives the pod to jetgate check-config, which refuses what jetgate would
// refuse to start with.
func checkPodConfig(t *testing.T, where string, o *objects) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "jetgate.yaml")
	if err := os.WriteFile(file, []byte(o.configMap.Data["jetgate.yaml"]), 0o600); err != nil {
		t.Fatal(err)
	}
	c := o.deployment.Spec.Template.Spec.Containers[0]
	args := []string{"check-config"}
	for _, a := range c.Args {
		if strings.HasPrefix(a, "--config=") {
			a = "--config=" + file
		}
		args = append(args, a)
	}
	cmd := exec.Command(mustBin(t), args...)
	cmd.Env, cmd.Dir = append(environ(), "JETGATE_NATS_URL=nats://nats:4222"), dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("%s: the pod's jetgate %s: %v\n%s", where, strings.Join(args, " "), err, out)
	}
}

var helpFlag = regexp.MustCompile(`(?m)^  -([\w-]+)`)

// jetgateFlags are the flags jetgate --help lists.
func jetgateFlags(t *testing.T) map[string]bool {
	t.Helper()
	out, _ := exec.Command(mustBin(t), "--help").CombinedOutput()
	flags := map[string]bool{}
	for _, m := range helpFlag.FindAllStringSubmatch(string(out), -1) {
		flags[m[1]] = true
	}
	if !flags["nats-url"] {
		t.Fatalf("jetgate --help lists no --nats-url:\n%s", out)
	}
	return flags
}
