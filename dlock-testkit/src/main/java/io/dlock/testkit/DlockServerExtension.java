package io.dlock.testkit;

import java.util.EnumSet;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolutionException;
import org.junit.jupiter.api.extension.ParameterResolver;
import org.junit.platform.commons.support.AnnotationSupport;

/**
 * The extension behind {@link DlockServer}: servers live in the class-level store, so JUnit closes
 * them when the class ends, also when a test or a {@code @BeforeAll} method failed.
 *
 * <p>Thread-safety: JUnit calls it from the thread running the class; the store is thread-safe.
 */
public final class DlockServerExtension implements BeforeAllCallback, ParameterResolver {
    private static final ExtensionContext.Namespace NAMESPACE =
            ExtensionContext.Namespace.create(DlockServerExtension.class);

    /**
     * Starts every server the test class declares.
     *
     * <p>Blocking: until each server serves. On failure: the exception of the server that could not
     * start (the servers already started are stopped with the class).
     *
     * @param context the class's context
     */
    @Override
    public void beforeAll(ExtensionContext context) {
        for (DlockServer.Kind kind : kinds(context)) {
            server(context, kind);
        }
    }

    /**
     * Whether the parameter is a server class the test class declares, or {@link TestServer} with
     * one declared kind.
     *
     * <p>Blocking: never.
     */
    @Override
    public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
        return kindFor(parameter.getParameter().getType(), kinds(context)).isPresent();
    }

    /**
     * The running server for the parameter.
     *
     * <p>Blocking: until the server serves, if it was not started yet (a constructor parameter of a
     * class whose {@code beforeAll} did not run). On failure: {@link ParameterResolutionException}.
     */
    @Override
    public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
        Class<?> type = parameter.getParameter().getType();
        DlockServer.Kind kind = kindFor(type, kinds(context))
                .orElseThrow(() -> new ParameterResolutionException("no @DlockServer kind for " + type.getName()));
        return server(context, kind);
    }

    private static Set<DlockServer.Kind> kinds(ExtensionContext context) {
        Set<DlockServer.Kind> kinds = EnumSet.noneOf(DlockServer.Kind.class);
        for (Optional<ExtensionContext> c = Optional.of(context);
                c.isPresent();
                c = c.get().getParent()) {
            c.get()
                    .getTestClass()
                    .flatMap(type -> AnnotationSupport.findAnnotation(type, DlockServer.class))
                    .ifPresent(a -> kinds.addAll(Set.of(a.value())));
        }
        return kinds;
    }

    private static Optional<DlockServer.Kind> kindFor(Class<?> type, Set<DlockServer.Kind> kinds) {
        if (type == TestServer.class) {
            return kinds.size() == 1 ? Optional.of(kinds.iterator().next()) : Optional.empty();
        }
        return kinds.stream().filter(k -> k.type == type).findFirst();
    }

    private static TestServer server(ExtensionContext context, DlockServer.Kind kind) {
        ExtensionContext owner = runScoped(context) ? context.getRoot() : classContext(context);
        return owner.getStore(NAMESPACE)
                .getOrComputeIfAbsent(kind, k -> new Running(kind.start()), Running.class)
                .server;
    }

    /** Whether the innermost class declaring {@link DlockServer} asks for {@link DlockServer.Scope#RUN}. */
    private static boolean runScoped(ExtensionContext context) {
        for (Optional<ExtensionContext> c = Optional.of(context);
                c.isPresent();
                c = c.get().getParent()) {
            Optional<DlockServer> declared =
                    c.get().getTestClass().flatMap(type -> AnnotationSupport.findAnnotation(type, DlockServer.class));
            if (declared.isPresent()) {
                return declared.get().scope() == DlockServer.Scope.RUN;
            }
        }
        return false;
    }

    /** The outermost class context, so that nested classes share their enclosing class's servers. */
    private static ExtensionContext classContext(ExtensionContext context) {
        ExtensionContext outer = context;
        for (Optional<ExtensionContext> c = Optional.of(context);
                c.isPresent();
                c = c.get().getParent()) {
            if (c.get().getTestClass().isPresent()) {
                outer = c.get();
            }
        }
        return outer;
    }

    private record Running(TestServer server) implements ExtensionContext.Store.CloseableResource {
        @Override
        public void close() {
            server.close();
        }
    }
}
