/*
Copyright 2026.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	// Import all Kubernetes client auth plugins (e.g. Azure, GCP, OIDC, etc.)
	// to ensure that exec-entrypoint and run can make use of them.
	_ "k8s.io/client-go/plugin/pkg/client/auth"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	demov1alpha1 "github.com/deltacache/deltacache/api/v1alpha1"
	"github.com/deltacache/deltacache/internal/controller"
	"github.com/deltacache/deltacache/internal/devcluster"
	dcache "github.com/deltacache/deltacache/pkg/cache"
	// +kubebuilder:scaffold:imports
)

var (
	scheme   = runtime.NewScheme()
	setupLog = ctrl.Log.WithName("setup")
)

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))

	utilruntime.Must(demov1alpha1.AddToScheme(scheme))
	// +kubebuilder:scaffold:scheme
}

// nolint:gocyclo
func main() {
	var metricsAddr string
	var metricsCertPath, metricsCertName, metricsCertKey string
	var webhookCertPath, webhookCertName, webhookCertKey string
	var webhookPort int
	var enableLeaderElection bool
	var probeAddr string
	var secureMetrics bool
	var enableHTTP2 bool
	var tlsOpts []func(*tls.Config)
	var localControlPlane string
	var statusInterval time.Duration
	var informerStallTimeout time.Duration
	var cacheSnapshotDir string
	flag.StringVar(&localControlPlane, "local-control-plane", localAuto,
		"auto: run against the cluster of the kubeconfig (--kubeconfig, KUBECONFIG, in-cluster, ~/.kube/config), "+
			"or start a local control plane with seeded demo Apps when there is none; true: always start one; false: never.")
	flag.DurationVar(&statusInterval, "status-interval", 5*time.Second,
		"With a local control plane, how often to print the table of App statuses (0 disables it).")
	flag.StringVar(&cacheSnapshotDir, "cache-snapshot-dir", "",
		"A directory where the cache writes its informers' objects (every few minutes and at stop) and "+
			"starts from them after a restart instead of listing everything again. Empty: off.")
	flag.DurationVar(&informerStallTimeout, "informer-stall-timeout", dcache.DefaultStallTimeout,
		"The healthz check fails when a synced informer has not heard from the API server (no event, bookmark "+
			"or successful watch) for longer than this.")
	flag.StringVar(&metricsAddr, "metrics-bind-address", "0", "The address the metrics endpoint binds to. "+
		"Use :8443 for HTTPS or :8080 for HTTP, or leave as 0 to disable the metrics service.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "The address the probe endpoint binds to.")
	flag.BoolVar(&enableLeaderElection, "leader-elect", false,
		"Enable leader election for controller manager. "+
			"Enabling this will ensure there is only one active controller manager.")
	flag.BoolVar(&secureMetrics, "metrics-secure", true,
		"If set, the metrics endpoint is served securely via HTTPS. Use --metrics-secure=false to use HTTP instead.")
	flag.StringVar(&webhookCertPath, "webhook-cert-path", "", "The directory that contains the webhook certificate.")
	flag.StringVar(&webhookCertName, "webhook-cert-name", "tls.crt", "The name of the webhook certificate file.")
	flag.StringVar(&webhookCertKey, "webhook-cert-key", "tls.key", "The name of the webhook key file.")
	flag.IntVar(&webhookPort, "webhook-port", 9443, "Port the webhook server listens on. "+
		"Defaults to 9443. Set -1 to disable the webhook server.")
	flag.StringVar(&metricsCertPath, "metrics-cert-path", "",
		"The directory that contains the metrics server certificate.")
	flag.StringVar(&metricsCertName, "metrics-cert-name", "tls.crt", "The name of the metrics server certificate file.")
	flag.StringVar(&metricsCertKey, "metrics-cert-key", "tls.key", "The name of the metrics server key file.")
	flag.BoolVar(&enableHTTP2, "enable-http2", false,
		"If set, HTTP/2 will be enabled for the metrics and webhook servers")
	opts := zap.Options{
		Development: true,
	}
	var sharding shardFlags
	sharding.bind(flag.CommandLine)
	opts.BindFlags(flag.CommandLine)
	flag.Parse()

	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	if err := sharding.check(enableLeaderElection); err != nil {
		setupLog.Error(err, "Invalid flags")
		os.Exit(1)
	}

	// if the enable-http2 flag is false (the default), http/2 should be disabled
	// due to its vulnerabilities. More specifically, disabling http/2 will
	// prevent from being vulnerable to the HTTP/2 Stream Cancellation and
	// Rapid Reset CVEs. For more information see:
	// - https://github.com/advisories/GHSA-qppj-fm5r-hxr3
	// - https://github.com/advisories/GHSA-4374-p667-p6c8
	disableHTTP2 := func(c *tls.Config) {
		setupLog.Info("Disabling HTTP/2")
		c.NextProtos = []string{"http/1.1"}
	}

	if !enableHTTP2 {
		tlsOpts = append(tlsOpts, disableHTTP2)
	}

	// Initial webhook TLS options
	webhookTLSOpts := tlsOpts
	webhookServerOptions := webhook.Options{
		TLSOpts: webhookTLSOpts,
		Port:    webhookPort,
	}

	if len(webhookCertPath) > 0 {
		setupLog.Info("Initializing webhook certificate watcher using provided certificates",
			"webhook-cert-path", webhookCertPath, "webhook-cert-name", webhookCertName, "webhook-cert-key", webhookCertKey)

		webhookServerOptions.CertDir = webhookCertPath
		webhookServerOptions.CertName = webhookCertName
		webhookServerOptions.KeyName = webhookCertKey
	}

	webhookServer := webhook.NewServer(webhookServerOptions)

	// Metrics endpoint is enabled in 'config/default/kustomization.yaml'. The Metrics options configure the server.
	// More info:
	// - https://pkg.go.dev/sigs.k8s.io/controller-runtime@v0.25.0/pkg/metrics/server
	// - https://book.kubebuilder.io/reference/metrics.html
	metricsServerOptions := metricsserver.Options{
		BindAddress:   metricsAddr,
		SecureServing: secureMetrics,
		TLSOpts:       tlsOpts,
	}

	if secureMetrics {
		// FilterProvider is used to protect the metrics endpoint with authn/authz.
		// These configurations ensure that only authorized users and service accounts
		// can access the metrics endpoint. The RBAC are configured in 'config/rbac/kustomization.yaml'. More info:
		// https://pkg.go.dev/sigs.k8s.io/controller-runtime@v0.25.0/pkg/metrics/filters#WithAuthenticationAndAuthorization
		metricsServerOptions.FilterProvider = filters.WithAuthenticationAndAuthorization
	}

	// If the certificate is not specified, controller-runtime will automatically
	// generate self-signed certificates for the metrics server. While convenient for development and testing,
	// this setup is not recommended for production.
	//
	// TODO(user): If you enable certManager, uncomment the following lines:
	// - [METRICS-WITH-CERTS] at config/default/kustomization.yaml to generate and use certificates
	// managed by cert-manager for the metrics server.
	// - [PROMETHEUS-WITH-CERTS] at config/prometheus/kustomization.yaml for TLS certification.
	if len(metricsCertPath) > 0 {
		setupLog.Info("Initializing metrics certificate watcher using provided certificates",
			"metrics-cert-path", metricsCertPath, "metrics-cert-name", metricsCertName, "metrics-cert-key", metricsCertKey)

		metricsServerOptions.CertDir = metricsCertPath
		metricsServerOptions.CertName = metricsCertName
		metricsServerOptions.KeyName = metricsCertKey
	}

	var startedLocal atomic.Pointer[devcluster.ControlPlane]
	ctx := devcluster.ShutdownSignals(func() {
		if cp := startedLocal.Load(); cp != nil {
			setupLog.Info("Second signal: stopping the local control plane before exiting")
			stopControlPlane(cp)
		}
	}, os.Exit)

	cfg, local, err := restConfig(localControlPlane)
	if err != nil {
		setupLog.Error(err, "Failed to find a cluster")
		os.Exit(1)
	}
	if local != nil {
		startedLocal.Store(local)
		defer stopControlPlane(local)
		enableLeaderElection = false
	}

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme,
		// deltacache's informer cache serves every Get and List of the manager's client, and
		// answers pod Lists by the `app` label from an index instead of a scan. With
		// --shard-identity it holds only this replica's share of the Apps and Pods; with
		// --cache-snapshot-dir a restarted manager starts from the objects it held.
		NewCache:               dcache.NewWith(cacheOptions(cacheSnapshotDir, sharding.cacheOptions())...),
		Metrics:                metricsServerOptions,
		WebhookServer:          webhookServer,
		HealthProbeBindAddress: probeAddr,
		LeaderElection:         enableLeaderElection,
		LeaderElectionID:       "10e816c7.deltacache.io",
		// LeaderElectionReleaseOnCancel defines if the leader should step down voluntarily
		// when the Manager ends. This requires the binary to immediately end when the
		// Manager is stopped, otherwise, this setting is unsafe. Setting this significantly
		// speeds up voluntary leader transitions as the new leader don't have to wait
		// LeaseDuration time first.
		//
		// In the default scaffold provided, the program ends immediately after
		// the manager stops, so would be fine to enable this option. However,
		// if you are doing or is intended to do any operation such as perform cleanups
		// after the manager stops then its usage might be unsafe.
		// LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		setupLog.Error(err, "Failed to start manager")
		exit(local)
	}

	if err := controller.SetupIndexes(ctx, mgr); err != nil {
		setupLog.Error(err, "Failed to set up indexes")
		exit(local)
	}
	appReconciler := &controller.AppReconciler{
		Client: mgr.GetClient(),
		Scheme: mgr.GetScheme(),
	}
	if sharding.reconcileLog != "" {
		if appReconciler.ReconcileLog, err = controller.OpenReconcileLog(sharding.reconcileLog, sharding.replica()); err != nil {
			setupLog.Error(err, "Failed to open the reconcile log")
			exit(local)
		}
		defer func() { _ = appReconciler.ReconcileLog.Close() }()
	}
	if sharding.enabled() {
		// No App is reconciled by two replicas at once: requests of namespaces this
		// replica does not serve are skipped, and a namespace is handed over only once
		// its running reconciles returned.
		appReconciler.Guard = func(r reconcile.Reconciler) (reconcile.Reconciler, error) {
			return dcache.ShardedReconciler(mgr.GetCache(), &demov1alpha1.App{}, r)
		}
	}
	if err := appReconciler.SetupWithManager(mgr); err != nil {
		setupLog.Error(err, "Failed to create controller", "controller", "app")
		exit(local)
	}
	// +kubebuilder:scaffold:builder

	if local != nil {
		if err := addPlayground(ctx, mgr, statusInterval); err != nil {
			setupLog.Error(err, "Failed to seed the local control plane")
			exit(local)
		}
	}

	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		setupLog.Error(err, "Failed to set up health check")
		exit(local)
	}
	// Liveness also fails when an informer that had synced hears nothing from the API
	// server for --informer-stall-timeout; readiness waits until every informer of the
	// cache has synced, and names the kinds that have not and their last errors
	// (GET /readyz/informers shows them).
	if err := mgr.AddHealthzCheck("informers", dcache.HealthzCheck(mgr.GetCache(), informerStallTimeout)); err != nil {
		setupLog.Error(err, "Failed to set up informer health check")
		exit(local)
	}
	if err := mgr.AddReadyzCheck("informers", dcache.ReadyzCheck(mgr.GetCache())); err != nil {
		setupLog.Error(err, "Failed to set up ready check")
		exit(local)
	}

	setupLog.Info("Starting manager")
	if err := mgr.Start(ctx); err != nil {
		setupLog.Error(err, "Failed to run manager")
		exit(local)
	}
}

// localAuto is the default of --local-control-plane: a local control plane only when no
// cluster is configured.
const localAuto = "auto"

// restConfig returns the cluster to run against. mode "auto" uses the kubeconfig when there is
// one and otherwise starts a local control plane; "true" always starts one; "false" never does.
// The returned control plane is nil when none was started.
func restConfig(mode string) (*rest.Config, *devcluster.ControlPlane, error) {
	switch mode {
	case localAuto, "true", "false":
	default:
		return nil, nil, fmt.Errorf("--local-control-plane=%q: want auto, true or false", mode)
	}
	if mode == "false" || (mode == localAuto && clusterConfigured()) {
		cfg, err := ctrl.GetConfig()
		return cfg, nil, err
	}
	if mode == localAuto {
		setupLog.Info("No kubeconfig found (--kubeconfig, KUBECONFIG, in-cluster, ~/.kube/config); " +
			"starting a local control plane")
	}
	start := time.Now()
	cp, err := devcluster.StartControlPlane("", "config/crd/bases")
	if err != nil {
		return nil, nil, err
	}
	setupLog.Info("Local control plane running", "host", cp.Config.Host, "kubeconfig", cp.KubeconfigPath,
		"seconds", time.Since(start).Seconds())
	return cp.Config, cp, nil
}

// clusterConfigured reports whether any of the sources ctrl.GetConfig reads is present:
// the --kubeconfig flag, $KUBECONFIG, an in-cluster service account, or ~/.kube/config.
// Checking first keeps ctrl.GetConfig from logging its in-cluster failure as an error when
// the answer is simply "no cluster here".
func clusterConfigured() bool {
	if f := flag.Lookup("kubeconfig"); f != nil && f.Value.String() != "" {
		return true
	}
	if os.Getenv("KUBECONFIG") != "" || os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		return true
	}
	if home, err := os.UserHomeDir(); err == nil {
		if _, err := os.Stat(filepath.Join(home, ".kube", "config")); err == nil {
			return true
		}
	}
	return false
}

// addPlayground seeds the local control plane with the samples of config/samples and pods
// for them, and adds the kubelet stand-in and the status table as runnables of mgr.
func addPlayground(ctx context.Context, mgr manager.Manager, statusInterval time.Duration) error {
	direct, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme()})
	if err != nil {
		return err
	}
	samples, err := devcluster.LoadSamples("config/samples")
	if err != nil {
		return fmt.Errorf("loading config/samples: %w", err)
	}
	apps, err := devcluster.SeedApps(ctx, direct, "default", samples, 3)
	if err != nil {
		return err
	}
	setupLog.Info("Seeded the local control plane", "apps", len(apps), "podsPerApp", 3)
	kubelet := &devcluster.Kubelet{Client: direct, Interval: 2 * time.Second, ChaosPercent: 3}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		kubelet.Run(ctx, ctrl.Log.WithName("kubelet"))
		return nil
	})); err != nil {
		return err
	}
	if statusInterval > 0 {
		return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			devcluster.PrintStatusTable(ctx, direct, os.Stdout, statusInterval)
			return nil
		}))
	}
	return nil
}

// stopControlPlane stops the local control plane and logs how it went; a second call
// waits for the first.
func stopControlPlane(cp *devcluster.ControlPlane) {
	setupLog.Info("Stopping the local control plane")
	start := time.Now()
	if err := cp.Stop(); err != nil {
		setupLog.Error(err, "Failed to stop the local control plane")
		return
	}
	setupLog.Info("Local control plane stopped", "seconds", time.Since(start).Seconds())
}

// exit stops the local control plane, if any, and exits with status 1.
func exit(local *devcluster.ControlPlane) {
	if local != nil {
		stopControlPlane(local)
	}
	os.Exit(1)
}

// cacheOptions are the manager cache's options: the label index of the App controller's
// pod Lists, snapshots in snapshotDir when it is set (--cache-snapshot-dir), and the
// sharding options.
func cacheOptions(snapshotDir string, sharding []dcache.Option) []dcache.Option {
	opts := []dcache.Option{dcache.WithLabelIndexes(controller.AppLabel)}
	if snapshotDir != "" {
		opts = append(opts, dcache.WithSnapshots(snapshotDir))
	}
	return append(opts, sharding...)
}
