package io.dlock.release;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import javax.xml.parsers.DocumentBuilderFactory;
import javax.xml.parsers.ParserConfigurationException;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;
import org.xml.sax.SAXException;

/**
 * The build's modules as the root POM lists them, and the ones a release publishes: every module except the
 * artifacts the release profile's central-publishing-maven-plugin excludes. Reads the POM files and the modules'
 * {@code target/} directories; holds no state of its own.
 */
final class Reactor {

    /** A module of the build: its directory, artifactId and packaging. */
    record Module(String artifactId, Path dir, String packaging) {

        boolean isJar() {
            return packaging.equals("jar");
        }

        /** {@code target/<artifactId>-<version><suffix>}, e.g. suffix {@code -sources.jar}. */
        Path artifact(String version, String suffix) {
            return dir.resolve("target").resolve(artifactId + "-" + version + suffix);
        }

        Path flattenedPom() {
            return dir.resolve("target").resolve(".flattened-pom.xml");
        }

        Path sbom() {
            return dir.resolve("target").resolve("bom.json");
        }
    }

    static final String PUBLISHER = "central-publishing-maven-plugin";

    private Reactor() {}

    static Path root() {
        return Path.of(System.getProperty("dlock.root", "..")).toAbsolutePath().normalize();
    }

    static String version() {
        String version = System.getProperty("dlock.version");
        if (version == null || version.isBlank()) {
            throw new IllegalStateException("system property dlock.version is not set (run through Maven)");
        }
        return version;
    }

    /** Every module the root POM lists, in its order. */
    static List<Module> modules() {
        Element root = parse(root().resolve("pom.xml"));
        List<Module> modules = new ArrayList<>();
        for (Element module : descendants(child(root, "modules"), "module")) {
            Path dir = root().resolve(module.getTextContent().trim()).normalize();
            Element pom = parse(dir.resolve("pom.xml"));
            String packaging = text(pom, "packaging");
            modules.add(new Module(text(pom, "artifactId"), dir, packaging.isEmpty() ? "jar" : packaging));
        }
        return modules;
    }

    /** The artifactIds the release profile keeps out of the bundle it uploads. */
    static Set<String> excludedFromRelease() {
        Element root = parse(root().resolve("pom.xml"));
        for (Element plugin : descendants(root, "plugin")) {
            if (text(plugin, "artifactId").equals(PUBLISHER)) {
                Set<String> excluded = new LinkedHashSet<>();
                for (Element artifact : descendants(plugin, "excludeArtifact")) {
                    excluded.add(artifact.getTextContent().trim());
                }
                return excluded;
            }
        }
        throw new IllegalStateException("the root pom.xml configures no " + PUBLISHER);
    }

    /** The modules a release uploads. */
    static List<Module> published() {
        Set<String> excluded = excludedFromRelease();
        return modules().stream()
                .filter(module -> !excluded.contains(module.artifactId()))
                .toList();
    }

    static Module published(String artifactId) {
        return published().stream()
                .filter(module -> module.artifactId().equals(artifactId))
                .findFirst()
                .orElseThrow(() -> new IllegalArgumentException("not a published module: " + artifactId));
    }

    static Element parse(Path xml) {
        try {
            DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
            factory.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
            Document document = factory.newDocumentBuilder().parse(Files.newInputStream(xml));
            return document.getDocumentElement();
        } catch (IOException | ParserConfigurationException | SAXException e) {
            throw new IllegalStateException("cannot read " + xml + ": " + e, e);
        }
    }

    /** The first direct child element named {@code name}, or an empty element if there is none. */
    static Element child(Element parent, String name) {
        for (Node node = parent.getFirstChild(); node != null; node = node.getNextSibling()) {
            if (node instanceof Element element && element.getTagName().equals(name)) {
                return element;
            }
        }
        return parent.getOwnerDocument().createElement(name);
    }

    /** The trimmed text of the direct child element {@code name}; empty if there is none. */
    static String text(Element parent, String name) {
        return child(parent, name).getTextContent().trim();
    }

    static List<Element> descendants(Element parent, String name) {
        NodeList nodes = parent.getElementsByTagName(name);
        List<Element> elements = new ArrayList<>();
        for (int i = 0; i < nodes.getLength(); i++) {
            elements.add((Element) nodes.item(i));
        }
        return elements;
    }
}
