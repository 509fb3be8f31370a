package dev.sluice.compat;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * One {@code sluice serve} process owned by a test class.
 *
 * <p>Started on a free loopback port with a fresh temporary data directory; {@link #close()} sends
 * SIGTERM ({@link Process#destroy()}) to exactly that process and waits for it, falling back to
 * SIGKILL only if it does not exit in time. A JVM shutdown hook does the same if the test JVM is
 * torn down before {@code @AfterAll} runs. Broker output goes to {@code target/sluice-logs/}.
 */
final class SluiceBroker implements AutoCloseable {

    static final int NODE_ID = 1;
    private static final Duration STOP_TIMEOUT = Duration.ofSeconds(20);

    private final Process process;
    private final int port;
    private final Path dataDir;
    private final Path logFile;
    private final Thread shutdownHook;
    /** False when the caller owns the data directory ({@link #startOn}): close leaves it. */
    private final boolean ownsData;
    private boolean closed;

    private SluiceBroker(Process process, int port, Path dataDir, Path logFile) {
        this(process, port, dataDir, logFile, true);
    }

    private SluiceBroker(Process process, int port, Path dataDir, Path logFile, boolean ownsData) {
        this.process = process;
        this.port = port;
        this.dataDir = dataDir;
        this.logFile = logFile;
        this.ownsData = ownsData;
        this.shutdownHook = new Thread(() -> {
            if (process.isAlive()) {
                process.destroy();
                try {
                    if (!process.waitFor(5, TimeUnit.SECONDS)) {
                        process.destroyForcibly();
                    }
                } catch (InterruptedException e) {
                    process.destroyForcibly();
                }
            }
        }, "sluice-broker-shutdown-" + port);
        Runtime.getRuntime().addShutdownHook(shutdownHook);
    }

    /** Starts a broker with the given {@code --set key=value} Kafka properties and waits until it accepts connections. */
    static SluiceBroker start(String name, Map<String, String> settings) throws Exception {
        Path bin = binary();
        if (!Files.isRegularFile(bin) || !Files.isExecutable(bin)) {
            throw new IllegalStateException("sluice binary not found or not executable: " + bin
                    + " (build it with `cargo build --release` or point SLUICE_BIN at it)");
        }
        Path logDir = Paths.get(System.getProperty("sluice.logDir", "target/sluice-logs"));
        Files.createDirectories(logDir);
        Duration readyTimeout = Duration.ofMillis(Long.getLong("sluice.startTimeoutMs", 10_000L));

        String failure = null;
        for (int attempt = 1; attempt <= 3; attempt++) {
            int port = freePort();
            Path dataDir = Files.createTempDirectory("sluice-compat-" + name + "-");
            String stamp = LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss-SSS"));
            Path logFile = logDir.resolve(name + "-" + stamp + "-" + port + ".log").toAbsolutePath();

            List<String> cmd = new ArrayList<>(List.of(bin.toString(), "serve"));
            // Settings that name their own listeners put "{port}" where the free port goes.
            if (!settings.containsKey("listeners")) {
                cmd.addAll(List.of("--listen", "127.0.0.1:" + port, "--advertise", "127.0.0.1:" + port));
            }
            // log.dirs may name several dirs; "{data}" stands for this broker's temp dir (the
            // dirs inside it go with it on close).
            String dirs = settings.getOrDefault("log.dirs", "{data}").replace("{data}", dataDir.toString());
            cmd.addAll(List.of("--data-dir", dirs, "--node-id", Integer.toString(NODE_ID)));
            for (Map.Entry<String, String> e : settings.entrySet()) {
                if (e.getKey().equals("log.dirs")) {
                    continue;
                }
                cmd.add("--set");
                cmd.add(e.getKey() + "=" + e.getValue().replace("{port}", Integer.toString(port)));
            }
            ProcessBuilder pb = new ProcessBuilder(cmd)
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(logFile.toFile()))
                    .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
            Files.writeString(logFile, "# " + String.join(" ", cmd) + System.lineSeparator(), StandardCharsets.UTF_8);

            Process process = pb.start();
            SluiceBroker broker = new SluiceBroker(process, port, dataDir, logFile);
            try {
                if (broker.awaitReady(readyTimeout)) {
                    System.out.printf("[sluice] %s: pid %d listening on 127.0.0.1:%d (log %s)%n",
                            name, process.pid(), port, logFile);
                    return broker;
                }
                failure = process.isAlive()
                        ? "did not accept connections on port " + port + " within " + readyTimeout.toMillis() + " ms"
                        : "exited with code " + process.exitValue() + " before accepting connections";
                failure += "\n--- " + logFile + " (tail) ---\n" + broker.logTail(40);
                boolean diedEarly = !process.isAlive();
                broker.close();
                if (!diedEarly) {
                    break; // hung, not a port race: retrying won't help
                }
            } catch (Throwable t) {
                broker.close();
                throw t;
            }
        }
        throw new IllegalStateException("sluice failed to start: " + failure);
    }

    /**
     * Starts a broker whose listeners {@code settings} name (no {@code --listen}/{@code --advertise})
     * on {@code dataDir}, and waits until {@code readyPort} accepts connections. The data directory
     * is the caller's: {@link #close()} leaves it, so a test can start the broker again on it.
     */
    static SluiceBroker startOn(String name, Path dataDir, int readyPort, Map<String, String> settings) throws Exception {
        Path bin = binary();
        if (!Files.isRegularFile(bin) || !Files.isExecutable(bin)) {
            throw new IllegalStateException("sluice binary not found or not executable: " + bin);
        }
        Path logDir = Paths.get(System.getProperty("sluice.logDir", "target/sluice-logs"));
        Files.createDirectories(logDir);
        Duration readyTimeout = Duration.ofMillis(Long.getLong("sluice.startTimeoutMs", 10_000L));
        String stamp = LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss-SSS"));
        Path logFile = logDir.resolve(name + "-" + stamp + "-" + readyPort + ".log").toAbsolutePath();
        List<String> cmd = new ArrayList<>(List.of(bin.toString(), "serve", "--data-dir", dataDir.toString(),
                "--node-id", Integer.toString(NODE_ID)));
        for (Map.Entry<String, String> e : settings.entrySet()) {
            cmd.add("--set");
            cmd.add(e.getKey() + "=" + e.getValue());
        }
        Files.writeString(logFile, "# " + String.join(" ", cmd) + System.lineSeparator(), StandardCharsets.UTF_8);
        Process process = new ProcessBuilder(cmd)
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(logFile.toFile()))
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                .start();
        SluiceBroker broker = new SluiceBroker(process, readyPort, dataDir, logFile, false);
        if (broker.awaitReady(readyTimeout)) {
            System.out.printf("[sluice] %s: pid %d ready on 127.0.0.1:%d (log %s)%n", name, process.pid(), readyPort, logFile);
            return broker;
        }
        String failure = (process.isAlive() ? "did not accept connections on port " + readyPort
                : "exited with code " + process.exitValue()) + "\n--- " + logFile + " (tail) ---\n" + broker.logTail(40);
        broker.close();
        throw new IllegalStateException("sluice failed to start: " + failure);
    }

    static SluiceBroker start(String name) throws Exception {
        return start(name, Map.of());
    }

    static Map<String, String> settings(String... keyValues) {
        Map<String, String> m = new LinkedHashMap<>();
        for (int i = 0; i + 1 < keyValues.length; i += 2) {
            m.put(keyValues[i], keyValues[i + 1]);
        }
        return m;
    }

    static Path binary() {
        String env = System.getenv("SLUICE_BIN");
        if (env != null && !env.isBlank()) {
            return Paths.get(env).toAbsolutePath().normalize();
        }
        String prop = System.getProperty("sluice.bin");
        if (prop != null && !prop.isBlank()) {
            return Paths.get(prop).toAbsolutePath().normalize();
        }
        return Paths.get("../../target/release/sluice").toAbsolutePath().normalize();
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(true);
            s.bind(new InetSocketAddress("127.0.0.1", 0));
            return s.getLocalPort();
        }
    }

    private boolean awaitReady(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                return false;
            }
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 250);
                return true;
            } catch (IOException notYet) {
                Thread.sleep(100);
            }
        }
        return false;
    }

    String bootstrap() {
        return "127.0.0.1:" + port;
    }

    int port() {
        return port;
    }

    Path logFile() {
        return logFile;
    }

    String logTail(int lines) {
        try {
            List<String> all = Files.readAllLines(logFile, StandardCharsets.UTF_8);
            return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
        } catch (IOException | UncheckedIOException e) {
            return "(could not read " + logFile + ": " + e + ")";
        }
    }

    /** SIGTERM the broker, wait for it, then remove its data directory. Safe to call more than once. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            if (process.isAlive()) {
                process.destroy(); // SIGTERM on Linux
                boolean exited = process.waitFor(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
                if (!exited) {
                    System.err.printf("[sluice] pid %d ignored SIGTERM for %d s; sending SIGKILL%n",
                            process.pid(), STOP_TIMEOUT.toSeconds());
                    process.destroyForcibly();
                    process.waitFor(10, TimeUnit.SECONDS);
                }
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        } finally {
            try {
                Runtime.getRuntime().removeShutdownHook(shutdownHook);
            } catch (IllegalStateException alreadyShuttingDown) {
                // the hook itself will run; nothing to do
            }
            if (ownsData && System.getenv("SLUICE_KEEP_DATA") == null) {
                deleteRecursively(dataDir);
            }
        }
    }

    static void deleteRecursively(Path dir) {
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
}
