package dev.sluice.compat;

import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.AfterTestExecutionCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A multi-node Sluice cluster: one {@code sluice serve} process per node, node ids 1..n, every
 * node a controller-quorum voter and a broker.
 *
 * <p>Each node gets a free loopback client port and a free controller (Raft) port, its own data
 * directory {@code <tmp>/node-N} and its own log file in {@code target/sluice-logs/} (stdout and
 * stderr; a restart appends to the same file). All nodes are launched together, since none can
 * become ready before a quorum of voters is up; a node counts as ready once it printed a line
 * starting with {@value #READY_PREFIX} (also accepted after a log prefix; see {@link #isReadyLine})
 * within {@link #READY_TIMEOUT}.
 *
 * <p>Processes are only ever addressed through their own {@link Process} handle (that pid):
 * {@link #kill} is SIGKILL, {@link #stop} SIGTERM with a SIGKILL fallback, {@link #close} stops
 * every node that is still running and removes the data directories. A JVM shutdown hook SIGKILLs
 * whatever is left if the test JVM goes down first.
 */
final class SluiceCluster implements AutoCloseable {

    static final String READY_PREFIX = "sluice ready:";
    static final int HEARTBEAT_INTERVAL_MS = 500;
    /** A broker that missed heartbeats for this long is fenced (and leaves the Metadata node list). */
    static final int SESSION_TIMEOUT_MS = 3000;
    static final Duration READY_TIMEOUT =
            Duration.ofMillis(Long.getLong("sluice.clusterReadyTimeoutMs", 20_000L));
    private static final Duration STOP_TIMEOUT = Duration.ofSeconds(20);
    private static final int START_ATTEMPTS = 3;

    /** One node: its fixed ports, directories and command line, and the current process, if any. */
    private static final class Node {
        final int id;
        final int clientPort;
        final int controllerPort;
        final Path dataDir;
        final Path logFile;
        List<String> command;
        volatile Process process;
        int starts;
        /** Log offset where the current incarnation's output begins. */
        long incarnationStart;
        /** Log offset up to which the current incarnation's complete lines were scanned. */
        long scanned;
        boolean ready;

        Node(int id, int clientPort, int controllerPort, Path dataDir, Path logFile) {
            this.id = id;
            this.clientPort = clientPort;
            this.controllerPort = controllerPort;
            this.dataDir = dataDir;
            this.logFile = logFile;
        }
    }

    private final String name;
    private final Path dataRoot;
    private final Map<Integer, Node> nodes = new TreeMap<>();
    private final Thread shutdownHook;
    private boolean closed;

    private SluiceCluster(String name, int size, Map<String, String> extraSettings) throws IOException {
        if (size < 1) {
            throw new IllegalArgumentException("a cluster needs at least one node: " + size);
        }
        this.name = name;
        Path logDir = Paths.get(System.getProperty("sluice.logDir", "target/sluice-logs")).toAbsolutePath();
        Files.createDirectories(logDir);
        this.dataRoot = Files.createTempDirectory("sluice-compat-" + name + "-");
        String stamp = LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss-SSS"));
        int[] ports = freePorts(2 * size);
        for (int id = 1; id <= size; id++) {
            int clientPort = ports[2 * (id - 1)];
            int controllerPort = ports[2 * (id - 1) + 1];
            nodes.put(id, new Node(id, clientPort, controllerPort, dataRoot.resolve("node-" + id),
                    logDir.resolve(name + "-" + stamp + "-node-" + id + ".log")));
        }
        String voters = quorumVoters();
        Map<String, String> settings = new LinkedHashMap<>();
        settings.put("controller.quorum.voters", voters);
        settings.put("broker.heartbeat.interval.ms", Integer.toString(HEARTBEAT_INTERVAL_MS));
        settings.put("broker.session.timeout.ms", Integer.toString(SESSION_TIMEOUT_MS));
        settings.putAll(extraSettings);
        String bin = SluiceBroker.binary().toString();
        for (Node n : nodes.values()) {
            List<String> cmd = new ArrayList<>(List.of(bin, "serve",
                    "--node-id", Integer.toString(n.id),
                    "--listen", "127.0.0.1:" + n.clientPort,
                    "--advertise", "127.0.0.1:" + n.clientPort,
                    "--data-dir", n.dataDir.toString()));
            settings.forEach((k, v) -> {
                cmd.add("--set");
                cmd.add(k + "=" + v);
            });
            n.command = List.copyOf(cmd);
        }
        List<Node> all = List.copyOf(nodes.values());
        this.shutdownHook = new Thread(() -> {
            for (Node n : all) {
                Process p = n.process;
                if (p != null && p.isAlive()) {
                    p.destroyForcibly();
                }
            }
        }, "sluice-cluster-shutdown-" + name);
        Runtime.getRuntime().addShutdownHook(shutdownHook);
    }

    /**
     * Launches {@code size} nodes with the standard quorum/heartbeat/session settings plus
     * {@code extraSettings} ({@code --set key=value}, later keys win) and waits until every node
     * printed its ready line. On failure every process is stopped and the exception carries each
     * node's log tail. Retries with fresh ports only if a node died of a port clash.
     */
    static SluiceCluster start(String name, int size, Map<String, String> extraSettings) throws Exception {
        Path bin = SluiceBroker.binary();
        if (!Files.isRegularFile(bin) || !Files.isExecutable(bin)) {
            throw new IllegalStateException("sluice binary not found or not executable: " + bin
                    + " (build it with `cargo build --release` or point SLUICE_BIN at it)");
        }
        String failure = null;
        for (int attempt = 1; attempt <= START_ATTEMPTS; attempt++) {
            SluiceCluster c = new SluiceCluster(name, size, extraSettings);
            try {
                long t0 = System.nanoTime();
                for (Node n : c.nodes.values()) {
                    c.launch(n);
                }
                String problem = c.awaitReady(c.nodes.values(), System.nanoTime() + READY_TIMEOUT.toNanos());
                if (problem == null) {
                    log("%s: %d nodes ready in %d ms (voters %s)", name, size,
                            TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0), c.quorumVoters());
                    return c;
                }
                failure = problem + "\n" + c.logTails(40);
                boolean portClash = c.nodes.values().stream().anyMatch(c::diedOfPortClash);
                c.close();
                if (!portClash) {
                    break;
                }
                log("%s: a node lost a port race (attempt %d); retrying on fresh ports", name, attempt);
            } catch (Throwable t) {
                c.close();
                throw t;
            }
        }
        throw new IllegalStateException("sluice cluster '" + name + "' failed to start: " + failure);
    }

    // ------------------------------------------------------------------ process control

    private void launch(Node n) throws IOException {
        Process running = n.process;
        if (running != null && running.isAlive()) {
            throw new IllegalStateException("node " + n.id + " is already running (pid " + running.pid() + ")");
        }
        n.starts++;
        Files.createDirectories(n.dataDir.getParent());
        Files.writeString(n.logFile, String.format("# %s start #%d: %s%n", LocalTime.now(), n.starts,
                        String.join(" ", n.command)), StandardCharsets.UTF_8,
                StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        n.incarnationStart = Files.size(n.logFile);
        n.scanned = n.incarnationStart;
        n.ready = false;
        n.process = new ProcessBuilder(n.command)
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(n.logFile.toFile()))
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                .start();
        log("%s: node %d started: pid %d, client 127.0.0.1:%d, controller 127.0.0.1:%d (log %s)", name, n.id,
                n.process.pid(), n.clientPort, n.controllerPort, n.logFile);
    }

    /** Null once every node of {@code which} is ready; otherwise what went wrong. */
    private String awaitReady(Collection<Node> which, long deadlineNanos) throws InterruptedException {
        while (true) {
            List<Integer> waiting = new ArrayList<>();
            for (Node n : which) {
                if (n.ready) {
                    continue;
                }
                if (scanForReadyLine(n)) {
                    n.ready = true;
                    log("%s: node %d (pid %d) is ready", name, n.id, n.process.pid());
                    continue;
                }
                if (!n.process.isAlive()) {
                    return "node " + n.id + " (pid " + n.process.pid() + ") exited with code "
                            + n.process.exitValue() + " before printing '" + READY_PREFIX + "'";
                }
                waiting.add(n.id);
            }
            if (waiting.isEmpty()) {
                return null;
            }
            if (System.nanoTime() > deadlineNanos) {
                return "node(s) " + waiting + " printed no '" + READY_PREFIX + "' line within "
                        + READY_TIMEOUT.toMillis() + " ms";
            }
            Thread.sleep(50);
        }
    }

    private static boolean scanForReadyLine(Node n) {
        try (RandomAccessFile f = new RandomAccessFile(n.logFile.toFile(), "r")) {
            long len = f.length();
            if (len <= n.scanned) {
                return false;
            }
            byte[] chunk = new byte[(int) Math.min(len - n.scanned, 4 << 20)];
            f.seek(n.scanned);
            f.readFully(chunk);
            int lastNewline = -1;
            for (int i = chunk.length - 1; i >= 0; i--) {
                if (chunk[i] == '\n') {
                    lastNewline = i;
                    break;
                }
            }
            if (lastNewline < 0) {
                return false; // no complete line yet
            }
            String lines = new String(chunk, 0, lastNewline + 1, StandardCharsets.UTF_8);
            n.scanned += lastNewline + 1;
            return lines.lines().anyMatch(SluiceCluster::isReadyLine);
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * The ready line: starts with {@value #READY_PREFIX}, or carries it right after a log-line
     * prefix (timestamp, level, target), as when the broker prints it through its logger.
     */
    static boolean isReadyLine(String line) {
        return line.startsWith(READY_PREFIX) || line.contains(" " + READY_PREFIX);
    }

    private boolean diedOfPortClash(Node n) {
        Process p = n.process;
        if (p == null || p.isAlive()) {
            return false;
        }
        String out = readFrom(n.logFile, n.incarnationStart).toLowerCase(Locale.ROOT);
        return out.contains("address already in use") || out.contains("address in use");
    }

    /** SIGKILL (kill -9) node {@code id} and wait for it to be gone. */
    synchronized void kill(int id) throws InterruptedException {
        Node n = node(id);
        Process p = n.process;
        if (p == null || !p.isAlive()) {
            throw new IllegalStateException("node " + id + " is not running");
        }
        log("%s: kill -9 node %d (pid %d)", name, id, p.pid());
        p.destroyForcibly();
        if (!p.waitFor(10, TimeUnit.SECONDS)) {
            throw new IllegalStateException("node " + id + " (pid " + p.pid() + ") survived SIGKILL for 10 s");
        }
    }

    /** SIGTERM node {@code id} and wait for a clean exit; SIGKILL if it takes longer than 20 s. */
    synchronized void stop(int id) throws InterruptedException {
        Node n = node(id);
        Process p = n.process;
        if (p == null || !p.isAlive()) {
            return;
        }
        log("%s: SIGTERM node %d (pid %d)", name, id, p.pid());
        p.destroy();
        if (!p.waitFor(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
            System.err.printf("[sluice-cluster] %s: node %d (pid %d) ignored SIGTERM for %d s; sending SIGKILL%n",
                    name, id, p.pid(), STOP_TIMEOUT.toSeconds());
            p.destroyForcibly();
            p.waitFor(10, TimeUnit.SECONDS);
        }
    }

    /**
     * Starts node {@code id} again with the same command line, ports and data directory and waits
     * for its ready line. A port still held by the previous incarnation is retried until the timeout.
     */
    synchronized void restart(int id) throws Exception {
        Node n = node(id);
        long deadline = System.nanoTime() + READY_TIMEOUT.toNanos();
        while (true) {
            launch(n);
            String problem = awaitReady(List.of(n), deadline);
            if (problem == null) {
                return;
            }
            if (diedOfPortClash(n) && System.nanoTime() < deadline) {
                Thread.sleep(500);
                continue;
            }
            Process p = n.process;
            if (p.isAlive()) {
                p.destroyForcibly();
                p.waitFor(10, TimeUnit.SECONDS);
            }
            throw new IllegalStateException(name + ": restart of node " + id + " failed: " + problem
                    + "\n--- node " + id + " log tail (" + n.logFile + ") ---\n" + logTail(id, 60));
        }
    }

    // ------------------------------------------------------------------ addresses and logs

    String name() {
        return name;
    }

    int size() {
        return nodes.size();
    }

    List<Integer> ids() {
        return List.copyOf(nodes.keySet());
    }

    boolean isRunning(int id) {
        Process p = node(id).process;
        return p != null && p.isAlive();
    }

    List<Integer> runningIds() {
        return nodes.keySet().stream().filter(this::isRunning).toList();
    }

    long pid(int id) {
        Process p = node(id).process;
        return p == null ? -1 : p.pid();
    }

    int clientPort(int id) {
        return node(id).clientPort;
    }

    int controllerPort(int id) {
        return node(id).controllerPort;
    }

    /** Bootstrap address of one node. */
    String bootstrap(int id) {
        return "127.0.0.1:" + node(id).clientPort;
    }

    /** Bootstrap list of every node, running or not. */
    String bootstrap() {
        return nodes.keySet().stream().map(this::bootstrap).collect(Collectors.joining(","));
    }

    /** Bootstrap list of the nodes that are running now. */
    String bootstrapRunning() {
        return runningIds().stream().map(this::bootstrap).collect(Collectors.joining(","));
    }

    /** The {@code controller.quorum.voters} value: {@code 1@127.0.0.1:Q1,2@...}. */
    String quorumVoters() {
        return nodes.values().stream().map(n -> n.id + "@127.0.0.1:" + n.controllerPort)
                .collect(Collectors.joining(","));
    }

    Path logFile(int id) {
        return node(id).logFile;
    }

    /** Whether some node's log (any start of it) has a line containing {@code needle}. */
    boolean anyLogContains(String needle) {
        for (Node n : nodes.values()) {
            try (Stream<String> lines = Files.lines(n.logFile, StandardCharsets.UTF_8)) {
                if (lines.anyMatch(l -> l.contains(needle))) {
                    return true;
                }
            } catch (IOException | UncheckedIOException e) {
                // Not written yet: nothing in it.
            }
        }
        return false;
    }

    /** Node {@code id}'s {@code --data-dir}. */
    Path dataDir(int id) {
        return node(id).dataDir;
    }

    String logTail(int id, int lines) {
        Path file = node(id).logFile;
        try {
            List<String> all = Files.readAllLines(file, StandardCharsets.UTF_8);
            return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
        } catch (IOException | UncheckedIOException e) {
            return "(could not read " + file + ": " + e + ")";
        }
    }

    /** Every node's log tail, each under a header naming the node, its state and its log file. */
    String logTails(int lines) {
        StringBuilder sb = new StringBuilder();
        for (Node n : nodes.values()) {
            Process p = n.process;
            String state = p == null ? "never started"
                    : p.isAlive() ? "running, pid " + p.pid() : "exited (" + p.exitValue() + "), pid " + p.pid();
            sb.append("--- ").append(name).append(" node ").append(n.id).append(" [").append(state).append("] ")
                    .append(n.logFile).append(" ---\n");
            List<String> notable = notableLines(n.logFile, 8);
            if (!notable.isEmpty()) {
                sb.append("(errors and panics anywhere in the log:)\n").append(String.join("\n", notable))
                        .append("\n(last ").append(lines).append(" lines:)\n");
            }
            sb.append(logTail(n.id, lines)).append('\n');
        }
        return sb.toString();
    }

    /** Up to {@code max} lines that start with "Error:" or report a panic (they may be far above the tail). */
    private static List<String> notableLines(Path file, int max) {
        try (Stream<String> lines = Files.lines(file, StandardCharsets.UTF_8)) {
            return lines.filter(l -> l.startsWith("Error:") || l.contains("panicked at")).limit(max).toList();
        } catch (IOException | UncheckedIOException e) {
            return List.of();
        }
    }

    private Node node(int id) {
        Node n = nodes.get(id);
        if (n == null) {
            throw new IllegalArgumentException("no node " + id + " in cluster " + name + " " + nodes.keySet());
        }
        return n;
    }

    private static String readFrom(Path file, long offset) {
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "r")) {
            long len = f.length();
            if (len <= offset) {
                return "";
            }
            byte[] buf = new byte[(int) Math.min(len - offset, 1 << 20)];
            f.seek(offset);
            f.readFully(buf);
            return new String(buf, StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "";
        }
    }

    /** {@code count} distinct free loopback ports (all sockets held open until every port is picked). */
    private static int[] freePorts(int count) throws IOException {
        List<ServerSocket> held = new ArrayList<>();
        try {
            int[] ports = new int[count];
            for (int i = 0; i < count; i++) {
                ServerSocket s = new ServerSocket();
                held.add(s);
                s.setReuseAddress(true);
                s.bind(new InetSocketAddress("127.0.0.1", 0));
                ports[i] = s.getLocalPort();
            }
            return ports;
        } finally {
            for (ServerSocket s : held) {
                try {
                    s.close();
                } catch (IOException ignored) {
                    // best effort
                }
            }
        }
    }

    static void log(String fmt, Object... args) {
        System.out.printf("[sluice-cluster] " + fmt + "%n", args);
    }

    // ------------------------------------------------------------------ teardown

    /**
     * SIGTERM every running node (all at once), wait up to 20 s for them, SIGKILL the stragglers,
     * then remove the data directories (unless SLUICE_KEEP_DATA is set). Safe to call more than once.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            List<Process> running = new ArrayList<>();
            for (Node n : nodes.values()) {
                Process p = n.process;
                if (p != null && p.isAlive()) {
                    p.destroy(); // SIGTERM, this pid only
                    running.add(p);
                }
            }
            long deadline = System.nanoTime() + STOP_TIMEOUT.toNanos();
            for (Process p : running) {
                long left = Math.max(0, deadline - System.nanoTime());
                if (!p.waitFor(left, TimeUnit.NANOSECONDS)) {
                    System.err.printf("[sluice-cluster] %s: pid %d ignored SIGTERM for %d s; sending SIGKILL%n",
                            name, p.pid(), STOP_TIMEOUT.toSeconds());
                    p.destroyForcibly();
                    p.waitFor(10, TimeUnit.SECONDS);
                }
            }
        } catch (InterruptedException e) {
            for (Node n : nodes.values()) {
                Process p = n.process;
                if (p != null && p.isAlive()) {
                    p.destroyForcibly();
                }
            }
            Thread.currentThread().interrupt();
        } finally {
            try {
                Runtime.getRuntime().removeShutdownHook(shutdownHook);
            } catch (IllegalStateException alreadyShuttingDown) {
                // the hook runs anyway
            }
            if (System.getenv("SLUICE_KEEP_DATA") == null) {
                deleteRecursively(dataRoot);
            }
        }
    }

    private static void deleteRecursively(Path dir) {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(dir)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.deleteIfExists(p);
                } catch (IOException ignored) {
                    // best effort
                }
            });
        } catch (IOException ignored) {
            // best effort
        }
    }

    // ------------------------------------------------------------------ JUnit glue

    /**
     * Register per test instance ({@code @RegisterExtension final SluiceCluster.Tracker clusters = ...}):
     * starts clusters for a test, prints every node's log tail (and any extra logs, e.g. a client
     * subprocess's) when the test fails, and stops whatever is still running after each test.
     */
    static final class Tracker implements AfterTestExecutionCallback, AfterEachCallback {
        private static final int TAIL_LINES = 60;
        private final List<SluiceCluster> clusters = new ArrayList<>();
        private final Map<String, Path> extraLogs = new LinkedHashMap<>();

        SluiceCluster start(String name, int size, Map<String, String> extraSettings) throws Exception {
            SluiceCluster c = SluiceCluster.start(name, size, extraSettings);
            synchronized (this) {
                clusters.add(c);
            }
            return c;
        }

        /** Another log to show when the test fails. */
        synchronized void addLog(String label, Path file) {
            extraLogs.put(label, file);
        }

        @Override
        public void afterTestExecution(ExtensionContext context) {
            context.getExecutionException().ifPresent(e -> dump(context.getDisplayName(), e));
        }

        private synchronized void dump(String test, Throwable failure) {
            StringBuilder sb = new StringBuilder();
            String summary = String.valueOf(failure).lines().findFirst().orElse("");
            sb.append("\n===== ").append(test).append(" failed: ").append(summary).append('\n');
            for (SluiceCluster c : clusters) {
                sb.append(c.logTails(TAIL_LINES));
            }
            for (Map.Entry<String, Path> e : extraLogs.entrySet()) {
                sb.append("--- ").append(e.getKey()).append(' ').append(e.getValue()).append(" (last ")
                        .append(TAIL_LINES).append(" lines) ---\n");
                try {
                    List<String> all = Files.readAllLines(e.getValue(), StandardCharsets.UTF_8);
                    sb.append(String.join("\n", all.subList(Math.max(0, all.size() - TAIL_LINES), all.size())));
                } catch (IOException | UncheckedIOException ex) {
                    sb.append("(could not read: ").append(ex).append(')');
                }
                sb.append('\n');
            }
            sb.append("===== end of logs for ").append(test).append('\n');
            System.err.print(sb);
            System.err.flush();
        }

        @Override
        public void afterEach(ExtensionContext context) {
            closeAll();
        }

        /** Stops every cluster this tracker started (SIGTERM, SIGKILL fallback). Idempotent. */
        synchronized void closeAll() {
            for (SluiceCluster c : clusters) {
                c.close();
            }
            clusters.clear();
            extraLogs.clear();
        }
    }
}
