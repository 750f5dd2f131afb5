package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"

	"github.com/llmprobe/llmprobe/deploy"
	"github.com/llmprobe/llmprobe/prober/manager"
)

// TestShardManifestsParse: the sharded StatefulSet's serve command and the
// Indexed Job's sweep command parse with the binary's flag parser for every
// pod index, and their shard counts equal the replicas / completions.
func TestShardManifestsParse(t *testing.T) {
	root := filepath.Join(deployDir, "kubernetes", "overlays")
	objs, err := deploy.Build(filepath.Join(root, "sharded"))
	if err != nil {
		t.Fatal(err)
	}
	sts := deploy.Of[appsv1.StatefulSet](objs)
	if len(sts) != 1 || len(deploy.Of[appsv1.Deployment](objs)) != 1 { // the simulator's
		t.Fatalf("overlays/sharded: %d StatefulSets, want 1 replacing the llmprobe Deployment", len(sts))
	}
	s := sts[0]
	n := int(*s.Spec.Replicas)
	c := s.Spec.Template.Spec.Containers[0]
	if len(c.Env) == 0 || c.Env[0].ValueFrom == nil || c.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.labels['apps.kubernetes.io/pod-index']" {
		t.Fatalf("overlays/sharded: POD_INDEX must come from the pod-index label: %+v", c.Env)
	}
	for i := range n {
		args := substitute(c.Args, "$(POD_INDEX)", i)
		in := parseInvocation(t, "overlays/sharded", args)
		sh, err := manager.ParseShard(in.flag("shard"))
		if err != nil || sh.Index != i || sh.Count != n {
			t.Errorf("overlays/sharded pod %d: --shard %q gives %v, %v; want %d/%d", i, in.flag("shard"), sh, err, i, n)
		}
	}

	objs, err = deploy.Build(filepath.Join(root, "sweep-job"))
	if err != nil {
		t.Fatal(err)
	}
	jobs := deploy.Of[batchv1.Job](objs)
	if len(jobs) != 1 || jobs[0].Spec.CompletionMode == nil || *jobs[0].Spec.CompletionMode != batchv1.IndexedCompletion {
		t.Fatalf("overlays/sweep-job: want one Indexed Job, got %d", len(jobs))
	}
	j := jobs[0]
	jc := j.Spec.Template.Spec.Containers[0]
	for i := range int(*j.Spec.Completions) {
		args := substitute(jc.Args, "$(JOB_COMPLETION_INDEX)", i)
		in := parseInvocation(t, "overlays/sweep-job", args)
		if in.flag("shard-count") != fmt.Sprint(*j.Spec.Completions) || in.flag("shard-index") != fmt.Sprint(i) {
			t.Errorf("overlays/sweep-job pod %d: --shard-index %s --shard-count %s, want %d/%d", i, in.flag("shard-index"), in.flag("shard-count"), i, *j.Spec.Completions)
		}
	}
}

func substitute(args []string, v string, i int) []string {
	out := make([]string, len(args))
	for k, a := range args {
		out[k] = strings.ReplaceAll(a, v, fmt.Sprint(i))
	}
	return out
}
