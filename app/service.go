package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/riverqueue/river"
	"riverqueue.com/riverui"

	"followfeed/config"
	"followfeed/database"
	"followfeed/httpapi"
	"followfeed/migrations"
	"followfeed/worker"
)

type mode int

const (
	modeServe mode = iota
	modeAPI
	modeWorker
)

func (m mode) String() string {
	return [...]string{"serve", "api", "worker"}[m]
}

func (m mode) http() bool    { return m != modeWorker }
func (m mode) working() bool { return m != modeAPI }

// OpenDB opens cfg's database with a pool named "followfeed <name>" in
// pg_stat_activity. Outside production a missing database is created, so
// `make run` works on a fresh server. Errors name DATABASE_URL.
func OpenDB(ctx context.Context, cfg *config.Config, name string) (*database.DB, error) {
	if !cfg.IsProduction() {
		if err := database.EnsureDatabase(ctx, cfg.DatabaseURL); err != nil {
			return nil, fmt.Errorf("opening database (DATABASE_URL): %w", err)
		}
	}
	db, err := database.Open(ctx, cfg.DatabaseURL, database.Options{MaxConns: cfg.DBMaxConns, AppName: "followfeed " + name})
	if err != nil {
		return nil, fmt.Errorf("opening database (DATABASE_URL): %w", err)
	}
	return db, nil
}

// attachReplica sends db.Read's work to DATABASE_REPLICA_URL when it is set.
// The replica need not be up at start: until it answers, reads go to the
// primary.
func attachReplica(cfg *config.Config, db *database.DB, name string, logger *slog.Logger) error {
	if cfg.DatabaseReplicaURL == "" {
		return nil
	}
	err := db.AttachReplica(cfg.DatabaseReplicaURL, database.ReplicaOptions{
		Options: database.Options{MaxConns: cfg.DBMaxConns, AppName: "followfeed " + name},
		Logger:  logger.With("db", "replica"),
	})
	if err != nil {
		return &config.Error{Var: "DATABASE_REPLICA_URL", Reason: err.Error()}
	}
	return nil
}

func runMigrate(ctx context.Context, args []string, inv invocation) error {
	getenv, stdout := inv.getenv, inv.stdout
	fs := newFlags("migrate", stdout, "Applies the app's and River's database migrations; safe to run concurrently.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	logger := NewLogger(cfg, stdout)
	db, err := OpenDB(ctx, cfg, "migrate")
	if err != nil {
		return err
	}
	defer db.Close()
	res, err := migrations.Up(ctx, db.Pool, logger)
	if err != nil {
		return err
	}
	if len(res.AppApplied) == 0 && len(res.RiverApplied) == 0 {
		fmt.Fprintln(stdout, "migrate: schema already current; nothing to do")
	} else {
		fmt.Fprintf(stdout, "migrate: applied %d app and %d River migrations\n", len(res.AppApplied), len(res.RiverApplied))
	}
	return nil
}

// runService runs the long-lived process of mode until ctx is cancelled.
func runService(ctx context.Context, args []string, inv invocation, m mode) error {
	cfg, migrate, err := serviceConfig(args, inv, m)
	if err != nil {
		return err
	}
	logger := NewLogger(cfg, inv.stdout).With("process", m.String())

	// Listen first: a taken or invalid address is reported before anything
	// touches the database.
	ln, err := listen(cfg)
	if err != nil {
		return err
	}
	defer ln.Close()
	var metricsLn net.Listener // METRICS_ADDR: /metrics apart
	if cfg.MetricsAddr != "" {
		if metricsLn, err = net.Listen("tcp", cfg.MetricsAddr); err != nil {
			return &config.Error{Var: "METRICS_ADDR", Reason: fmt.Sprintf("cannot listen on %q: %v", cfg.MetricsAddr, err)}
		}
		defer metricsLn.Close()
	}

	db, err := OpenDB(ctx, cfg, m.String())
	if err != nil {
		return err
	}
	defer db.Close()
	if err := prepareDB(ctx, cfg, db, m, migrate, logger); err != nil {
		return err
	}

	svc, err := NewServices(ctx, cfg, db, logger, inv.hooks)
	if err != nil {
		return err
	}
	defer svc.Close()
	// Credentials stored before they were sealed at rest are sealed now.
	if n, err := svc.channels.SealStored(ctx); err != nil {
		return err
	} else if n > 0 {
		logger.Info("sealed stored channel credentials", "channels", n)
	}

	// One registry for the process: River's job metrics subscribe to the
	// client before it starts, so no run is missed.
	reg := prometheus.NewRegistry()
	runner, err := startJobs(ctx, cfg, db, svc, m, reg, logger, inv.hooks.Jobs)
	if err != nil {
		return err
	}
	h, metrics, err := serviceHandler(ctx, cfg, db, svc, runner, m, reg, logger)
	if err != nil {
		return err
	}
	srv := httpapi.NewServer(cfg.HTTPAddr, h, logger)
	servers := []*http.Server{srv}
	serveErr := make(chan error, 2)
	// httpapi.Listener: net/http's own refusals (a request it cannot
	// parse, 431, 501, 505) are problem+json too.
	go func() { serveErr <- srv.Serve(httpapi.Listener(ln)) }()
	if metricsLn != nil {
		msrv := httpapi.NewServer(cfg.MetricsAddr, metrics, logger)
		servers = append(servers, msrv)
		go func() { serveErr <- msrv.Serve(httpapi.Listener(metricsLn)) }()
		logger.Info("metrics", "addr", metricsLn.Addr().String(), "url", "http://"+metricsLn.Addr().String()+"/metrics")
	}
	logListening(cfg, ln.Addr(), m, logger)
	return waitThenStop(ctx, cfg, servers, serveErr, runner, logger)
}

// serviceConfig reads the command line of mode (its one flag: -migrate)
// and the configuration.
func serviceConfig(args []string, inv invocation, m mode) (*config.Config, bool, error) {
	fs := newFlags(m.String(), inv.stdout, map[mode]string{
		modeServe:  "Runs the HTTP server and the job workers in one process.",
		modeAPI:    "Runs only the HTTP server; jobs are inserted for workers elsewhere.",
		modeWorker: "Runs only the job workers, with /healthz, /readyz and /metrics on HTTP_ADDR.",
	}[m])
	migrate := fs.Bool("migrate", false, "apply pending migrations before starting")
	if err := parseFlags(fs, args); err != nil {
		return nil, false, err
	}
	cfg, err := config.Load(inv.getenv)
	if err != nil {
		return nil, false, err
	}
	return cfg, *migrate, nil
}

// listen opens HTTP_ADDR; a PUBLIC_URL left unset becomes the address
// listened on.
func listen(cfg *config.Config) (net.Listener, error) {
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return nil, &config.Error{Var: "HTTP_ADDR", Reason: fmt.Sprintf("cannot listen on %q: %v", cfg.HTTPAddr, err)}
	}
	if cfg.PublicURLDefaulted {
		cfg.PublicURL.Host = reachableAddr(ln.Addr())
	}
	return ln, nil
}

// prepareDB applies the pending migrations (migrate) or refuses a schema
// that is not current, and attaches the read replica to an HTTP process.
func prepareDB(ctx context.Context, cfg *config.Config, db *database.DB, m mode, migrate bool, logger *slog.Logger) error {
	if migrate {
		if _, err := migrations.Up(ctx, db.Pool, logger); err != nil {
			return err
		}
	} else if err := checkSchema(ctx, db); err != nil {
		return err
	}
	if m.http() {
		// Only the HTTP routes read through db.Read; workers stay on the
		// primary.
		if err := attachReplica(cfg, db, m.String(), logger); err != nil {
			return err
		}
	}
	return nil
}

// startJobs starts the River client that works the jobs, in a mode that
// works them; nil in the API mode. made (Hooks.Jobs), when set, gets the
// client before it starts.
func startJobs(ctx context.Context, cfg *config.Config, db *database.DB, svc *Services, m mode, reg *prometheus.Registry, logger *slog.Logger, made func(*river.Client[pgx.Tx])) (*river.Client[pgx.Tx], error) {
	if !m.working() {
		return nil, nil
	}
	runner, err := worker.NewClient(worker.Deps{Pool: db.Pool, Logger: logger, Jobs: svc.jobs(cfg), Metrics: reg}, worker.Settings{
		SoftStop:         softStop(cfg.ShutdownWait),
		JobTimeout:       cfg.JobTimeout,
		RescueStuckAfter: cfg.RescueStuckAfter,
		RetryMax:         cfg.JobRetryMax,
		PollOnly:         cfg.RiverPollOnly,
		// River's cleaner deletes finished jobs after these.
		CompletedRetention: cfg.JobRetentionCompleted,
		CancelledRetention: cfg.JobRetentionCancelled,
		DiscardedRetention: cfg.JobRetentionDiscarded,
	})
	if err != nil {
		return nil, err
	}
	if made != nil {
		made(runner)
	}
	if err := runner.Start(ctx); err != nil {
		return nil, fmt.Errorf("starting River: %w", err)
	}
	// River's id for this process: river.river_leader.leader_id names the
	// leader by it and every job's attempted_by the processes that worked
	// it, so an operator finds which process leads (README "Leader
	// failover"). River's own start line is below the level River logs at.
	logger.Info("working jobs", "river_client_id", runner.ID())
	return runner, nil
}

// serviceHandler is the process's HTTP handler: the operations endpoints
// with their metrics, and in an HTTP mode the River UI (on runner, or on
// the inserter when this process works no jobs) and the product routes;
// with METRICS_ADDR, /metrics is the second handler's instead.
func serviceHandler(ctx context.Context, cfg *config.Config, db *database.DB, svc *Services, runner *river.Client[pgx.Tx], m mode, reg *prometheus.Registry, logger *slog.Logger) (http.Handler, http.Handler, error) {
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if r := db.Replica(); r != nil {
		reg.MustRegister(worker.NewReplicaCollector(r))
	}
	// The collectors that query the database at scrape time, which
	// httpapi gathers at most once a second.
	queried := prometheus.NewRegistry()
	queried.MustRegister(worker.NewJobsCollector(svc.inserter), worker.NewSourcesCollector(svc.Health()))
	if svc.fediverse != nil {
		queried.MustRegister(worker.NewFediverseCollector(svc.fediverse))
	}
	opts := httpapi.Options{
		Logger:         logger,
		Registry:       reg,
		Queried:        queried,
		Ready:          readiness(db),
		AdminUser:      cfg.AdminUser,
		AdminPassword:  cfg.AdminPassword,
		SecretKey:      cfg.SecretKey,
		SecureCookies:  cfg.PublicURL.Scheme == "https",
		CORSOrigins:    cfg.CORSOrigins,
		TrustedProxies: cfg.TrustedProxies,
		MetricsApart:   cfg.MetricsAddr != "",
	}
	var metrics http.Handler
	if opts.MetricsApart {
		metrics = httpapi.NewMetricsHandler(reg, queried, logger)
	}
	if m.http() {
		uiClient := runner
		if uiClient == nil {
			uiClient = svc.inserter
		}
		ui, err := riverui.NewHandler(&riverui.HandlerOpts{
			Endpoints: riverui.NewEndpoints(uiClient, nil),
			Logger:    logger,
			Prefix:    httpapi.AdminPrefix,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("creating River UI: %w", err)
		}
		if err := ui.Start(ctx); err != nil {
			return nil, nil, fmt.Errorf("starting River UI: %w", err)
		}
		opts.Admin = ui
		opts.Routes = svc.Routes(cfg)
	}
	return httpapi.NewHandler(opts), metrics, nil
}

// logListening says where the process listens and, in an HTTP mode, where
// the job UI is and (in development) how to try the API.
func logListening(cfg *config.Config, addr net.Addr, m mode, logger *slog.Logger) {
	base := "http://" + addr.String()
	logger.Info("listening", "addr", addr.String(), "url", base, "public_url", cfg.PublicURL.String(), "env", string(cfg.Env))
	if cfg.AdminPassword != "" && m.http() {
		logger.Info("job UI", "url", base+httpapi.AdminPrefix+"/", "user", cfg.AdminUser)
	}
	if cfg.Env == config.Development && m.http() {
		// The first thing a person trying the service needs: a token.
		logger.Info("try it", "token", "bin/followfeed token --sub me",
			"then", "curl -H 'Authorization: Bearer <token>' "+base+"/v1/me")
	}
}

// waitThenStop waits until ctx is cancelled or a server fails (serveErr;
// then the jobs stop at once). After a cancel it shuts down gracefully:
// stop accepting, let in-flight requests and running jobs finish within
// SHUTDOWN_TIMEOUT, then give up on them.
func waitThenStop(ctx context.Context, cfg *config.Config, servers []*http.Server, serveErr <-chan error, runner *river.Client[pgx.Tx], logger *slog.Logger) error {
	select {
	case err := <-serveErr:
		if runner != nil {
			_ = worker.Stop(context.WithoutCancel(ctx), runner)
		}
		return fmt.Errorf("HTTP server: %w", err)
	case <-ctx.Done():
	}

	logger.Info("shutting down", "timeout", cfg.ShutdownWait)
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownWait)
	defer cancel()
	var wg sync.WaitGroup
	httpErrs := make([]error, len(servers))
	var riverErr error
	for i, srv := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			httpErrs[i] = srv.Shutdown(shutdownCtx)
		}()
	}
	if runner != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			riverErr = worker.Stop(shutdownCtx, runner)
		}()
	}
	wg.Wait()
	if err := errors.Join(append(httpErrs, riverErr)...); err != nil {
		return fmt.Errorf("shutting down: %w", err)
	}
	logger.Info("stopped")
	return nil
}

// checkSchema refuses to work on a database whose schema is not current.
func checkSchema(ctx context.Context, db *database.DB) error {
	return migrations.Check(ctx, db.Pool)
}

// reachableAddr is addr as a browser on this machine can reach it: an
// unspecified listen address (":8080") becomes localhost.
func reachableAddr(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return addr.String()
	}
	return net.JoinHostPort("localhost", fmt.Sprint(tcp.Port))
}

// softStop leaves a fifth of the shutdown budget for River to cancel jobs
// and record their outcome after the soft timeout.
func softStop(total time.Duration) time.Duration { return total * 4 / 5 }

// readiness reports the database reachable and the schema current (not
// behind this binary's migrations).
func readiness(db *database.DB) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := db.Pool.Ping(ctx); err != nil {
			return errors.New("database unreachable")
		}
		// Checked on every probe (three small queries), so a schema
		// rolled back under a running process shows here at once.
		if err := migrations.Check(ctx, db.Pool); err != nil {
			if errors.Is(err, migrations.ErrOutdated) {
				return err
			}
			return errors.New("database schema could not be checked")
		}
		return nil
	}
}

// commandServices is what a one-off command (digest, harvest, activitypub)
// runs on: the database opened as name (its application_name), its schema
// checked as current, and the services wired with opts. closeAll releases
// them and the database.
func commandServices(ctx context.Context, cfg *config.Config, name string, stdout io.Writer, hooks Hooks, opts servicesOptions) (svc *Services, closeAll func(), err error) {
	logger := NewLogger(cfg, stdout)
	db, err := OpenDB(ctx, cfg, name)
	if err != nil {
		return nil, nil, err
	}
	if err := checkSchema(ctx, db); err != nil {
		db.Close()
		return nil, nil, err
	}
	if svc, err = newServices(ctx, cfg, db, logger, hooks, opts); err != nil {
		db.Close()
		return nil, nil, err
	}
	return svc, func() { svc.Close(); db.Close() }, nil
}
