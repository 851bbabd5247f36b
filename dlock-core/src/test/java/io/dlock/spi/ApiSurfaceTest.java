package io.dlock.spi;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.LockClient;
import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Guards the public API: every public signature of {@code io.dlock} (listed in
 * dlock-api/api-surface.txt) and {@code io.dlock.spi} (dlock-core/api-surface.txt). A change
 * fails this test until the file is updated in the same commit; run with
 * {@code -Ddlock.api.update=true} to rewrite the files, then review the diff.
 */
class ApiSurfaceTest {

    @Test
    void apiPackage_matchesCheckedInSurface() throws Exception {
        check(LockClient.class, "io.dlock", Path.of("..", "dlock-api", "api-surface.txt"));
    }

    @Test
    void spiPackage_matchesCheckedInSurface() throws Exception {
        check(LockProtocol.class, "io.dlock.spi", Path.of("api-surface.txt"));
    }

    private static void check(Class<?> anchor, String pkg, Path file) throws Exception {
        String actual = String.join("\n", surface(anchor, pkg)) + "\n";
        if (Boolean.getBoolean("dlock.api.update")) {
            Files.writeString(file, actual, StandardCharsets.UTF_8);
        }
        assertThat(Files.readString(file, StandardCharsets.UTF_8))
                .as("public surface of %s changed: update %s in the same commit (-Ddlock.api.update=true)", pkg, file)
                .isEqualTo(actual);
    }

    private static List<String> surface(Class<?> anchor, String pkg)
            throws IOException, URISyntaxException, ClassNotFoundException {
        Path root = Path.of(
                anchor.getProtectionDomain().getCodeSource().getLocation().toURI());
        TreeSet<String> lines = new TreeSet<>();
        List<String> names = new ArrayList<>();
        // In a reactor build the package is a classes directory; built alone, an installed jar.
        try (FileSystem jar = Files.isDirectory(root) ? null : FileSystems.newFileSystem(root);
                Stream<Path> files =
                        Files.list((jar == null ? root : jar.getPath("/")).resolve(pkg.replace('.', '/')))) {
            files.map(p -> p.getFileName().toString())
                    .filter(n -> n.endsWith(".class") && !n.equals("package-info.class"))
                    .forEach(n -> names.add(pkg + "." + n.substring(0, n.length() - ".class".length())));
        }
        for (String name : names) {
            Class<?> c = Class.forName(name, false, anchor.getClassLoader());
            if (!isExported(c)) {
                continue;
            }
            String type = c.getName();
            lines.add(type + " : " + Modifier.toString(c.getModifiers() & ~Modifier.STRICT & ~Modifier.INTERFACE) + " "
                    + (c.isInterface() ? "interface" : c.isEnum() ? "enum" : c.isRecord() ? "record" : "class")
                    + (c.getGenericSuperclass() != null
                                    && c.getSuperclass() != Object.class
                                    && !c.isEnum()
                                    && !c.isRecord()
                            ? " extends " + c.getGenericSuperclass().getTypeName()
                            : "")
                    + (c.getGenericInterfaces().length > 0
                            ? " implements "
                                    + String.join(
                                            ", ",
                                            Stream.of(c.getGenericInterfaces())
                                                    .map(t -> t.getTypeName())
                                                    .toList())
                            : ""));
            for (Constructor<?> k : c.getDeclaredConstructors()) {
                if (visible(k.getModifiers())) {
                    lines.add(type + " : " + k.toGenericString());
                }
            }
            for (Method m : c.getDeclaredMethods()) {
                if (visible(m.getModifiers()) && !m.isSynthetic()) {
                    lines.add(type + " : " + m.toGenericString());
                }
            }
            for (Field f : c.getDeclaredFields()) {
                if (visible(f.getModifiers()) && !f.isSynthetic()) {
                    lines.add(type + " : " + f.toGenericString());
                }
            }
        }
        return new ArrayList<>(lines);
    }

    private static boolean isExported(Class<?> c) {
        for (Class<?> k = c; k != null; k = k.getDeclaringClass()) {
            if (!Modifier.isPublic(k.getModifiers())) {
                return false;
            }
        }
        return true;
    }

    private static boolean visible(int modifiers) {
        return Modifier.isPublic(modifiers) || Modifier.isProtected(modifiers);
    }
}
