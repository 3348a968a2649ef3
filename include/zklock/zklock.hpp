// Everything a program needs: the session, the mutex, the read/write lock, the semaphore, the multi-lock.
#pragma once

#include <zklock/clock.hpp>
#include <zklock/election.hpp>
#include <zklock/error.hpp>
#include <zklock/multi_lock.hpp>
#include <zklock/revoke.hpp>
#include <zklock/mutex.hpp>
#include <zklock/participants.hpp>
#include <zklock/prometheus.hpp>
#include <zklock/semaphore.hpp>
#include <zklock/session.hpp>
#include <zklock/shared_mutex.hpp>
#include <zklock/stats.hpp>
#include <zklock/validation.hpp>
#include <zklock/while_held.hpp>
