/**
 * Internal: no compatibility guarantee; do not use. The background-connecting client behind
 * {@code dlock.connect=lazy} and the URI redaction the starter's logs and health details use.
 */
@NullMarked
package io.dlock.spring.boot.internal;

import org.jspecify.annotations.NullMarked;
