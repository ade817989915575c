/* Every Level Zero entry point of the CPU driver, declared with the API's own signature
 * (__typeof__ of the ze* prototype) so a definition that drifts from the API fails to
 * compile. Grouped by the file that defines it; cpu_tables.c puts them in the tables. */
#ifndef KAPI_CPU_API_H
#define KAPI_CPU_API_H

#include <level_zero/ze_api.h>

/* cpu_device.c: driver and device */
__typeof__(zeInit) cpu_init;
__typeof__(zeDriverGet) cpu_driver_get;
__typeof__(zeDriverGetApiVersion) cpu_driver_get_api_version;
__typeof__(zeDriverGetProperties) cpu_driver_get_properties;
__typeof__(zeDriverGetIpcProperties) cpu_driver_get_ipc_properties;
__typeof__(zeDriverGetExtensionProperties) cpu_driver_get_extension_properties;
__typeof__(zeDeviceGet) cpu_device_get;
__typeof__(zeDeviceGetSubDevices) cpu_device_get_sub_devices;
__typeof__(zeDeviceGetProperties) cpu_device_get_properties;
__typeof__(zeDeviceGetComputeProperties) cpu_device_get_compute_properties;
__typeof__(zeDeviceGetModuleProperties) cpu_device_get_module_properties;
__typeof__(zeDeviceGetCommandQueueGroupProperties) cpu_device_get_command_queue_group_properties;
__typeof__(zeDeviceGetMemoryProperties) cpu_device_get_memory_properties;
__typeof__(zeDeviceGetMemoryAccessProperties) cpu_device_get_memory_access_properties;
__typeof__(zeDeviceGetCacheProperties) cpu_device_get_cache_properties;
__typeof__(zeDeviceGetImageProperties) cpu_device_get_image_properties;
__typeof__(zeDeviceGetExternalMemoryProperties) cpu_device_get_external_memory_properties;
__typeof__(zeDeviceGetP2PProperties) cpu_device_get_p2p_properties;
__typeof__(zeDeviceCanAccessPeer) cpu_device_can_access_peer;
__typeof__(zeDeviceGetStatus) cpu_device_get_status;
__typeof__(zeDeviceGetGlobalTimestamps) cpu_device_get_global_timestamps;

/* cpu_context.c */
__typeof__(zeContextCreate) cpu_context_create;
__typeof__(zeContextCreateEx) cpu_context_create_ex;
__typeof__(zeContextDestroy) cpu_context_destroy;
__typeof__(zeContextGetStatus) cpu_context_get_status;
__typeof__(zeContextSystemBarrier) cpu_context_system_barrier;
__typeof__(zeContextMakeMemoryResident) cpu_context_make_memory_resident;
__typeof__(zeContextEvictMemory) cpu_context_evict_memory;

/* cpu_memory.c */
__typeof__(zeMemAllocShared) cpu_mem_alloc_shared;
__typeof__(zeMemAllocDevice) cpu_mem_alloc_device;
__typeof__(zeMemAllocHost) cpu_mem_alloc_host;
__typeof__(zeMemFree) cpu_mem_free;
__typeof__(zeMemGetAllocProperties) cpu_mem_get_alloc_properties;
__typeof__(zeMemGetAddressRange) cpu_mem_get_address_range;

/* cpu_queue.c */
__typeof__(zeCommandQueueCreate) cpu_command_queue_create;
__typeof__(zeCommandQueueDestroy) cpu_command_queue_destroy;
__typeof__(zeCommandQueueExecuteCommandLists) cpu_command_queue_execute_command_lists;
__typeof__(zeCommandQueueSynchronize) cpu_command_queue_synchronize;

/* cpu_list.c: command lists, events and barriers in them */
__typeof__(zeCommandListCreate) cpu_command_list_create;
__typeof__(zeCommandListCreateImmediate) cpu_command_list_create_immediate;
__typeof__(zeCommandListDestroy) cpu_command_list_destroy;
__typeof__(zeCommandListClose) cpu_command_list_close;
__typeof__(zeCommandListReset) cpu_command_list_reset;
__typeof__(zeCommandListAppendWriteGlobalTimestamp) cpu_command_list_append_write_global_timestamp;
__typeof__(zeCommandListAppendBarrier) cpu_command_list_append_barrier;
__typeof__(zeCommandListAppendMemoryRangesBarrier) cpu_command_list_append_memory_ranges_barrier;
__typeof__(zeCommandListAppendSignalEvent) cpu_command_list_append_signal_event;
__typeof__(zeCommandListAppendWaitOnEvents) cpu_command_list_append_wait_on_events;
__typeof__(zeCommandListAppendEventReset) cpu_command_list_append_event_reset;

/* cpu_copy.c */
__typeof__(zeCommandListAppendMemoryCopy) cpu_command_list_append_memory_copy;
__typeof__(zeCommandListAppendMemoryCopyFromContext)
    cpu_command_list_append_memory_copy_from_context;
__typeof__(zeCommandListAppendMemoryFill) cpu_command_list_append_memory_fill;
__typeof__(zeCommandListAppendMemoryCopyRegion) cpu_command_list_append_memory_copy_region;
__typeof__(zeCommandListAppendMemoryPrefetch) cpu_command_list_append_memory_prefetch;
__typeof__(zeCommandListAppendMemAdvise) cpu_command_list_append_mem_advise;

/* cpu_launch.c */
__typeof__(zeCommandListAppendLaunchKernel) cpu_command_list_append_launch_kernel;
__typeof__(zeCommandListAppendLaunchCooperativeKernel)
    cpu_command_list_append_launch_cooperative_kernel;
__typeof__(zeCommandListAppendLaunchKernelIndirect) cpu_command_list_append_launch_kernel_indirect;

/* cpu_event.c */
__typeof__(zeEventPoolCreate) cpu_event_pool_create;
__typeof__(zeEventPoolDestroy) cpu_event_pool_destroy;
__typeof__(zeEventCreate) cpu_event_create;
__typeof__(zeEventDestroy) cpu_event_destroy;
__typeof__(zeEventHostSignal) cpu_event_host_signal;
__typeof__(zeEventHostSynchronize) cpu_event_host_synchronize;
__typeof__(zeEventQueryStatus) cpu_event_query_status;
__typeof__(zeEventHostReset) cpu_event_host_reset;
__typeof__(zeEventQueryKernelTimestamp) cpu_event_query_kernel_timestamp;
__typeof__(zeFenceCreate) cpu_fence_create;
__typeof__(zeFenceDestroy) cpu_fence_destroy;
__typeof__(zeFenceHostSynchronize) cpu_fence_host_synchronize;
__typeof__(zeFenceQueryStatus) cpu_fence_query_status;
__typeof__(zeFenceReset) cpu_fence_reset;

/* cpu_module.c */
__typeof__(zeModuleCreate) cpu_module_create;
__typeof__(zeModuleDestroy) cpu_module_destroy;
__typeof__(zeModuleGetKernelNames) cpu_module_get_kernel_names;
__typeof__(zeModuleGetProperties) cpu_module_get_properties;

/* cpu_kernel.c */
__typeof__(zeKernelCreate) cpu_kernel_create;
__typeof__(zeKernelDestroy) cpu_kernel_destroy;
__typeof__(zeKernelSetCacheConfig) cpu_kernel_set_cache_config;
__typeof__(zeKernelSetGroupSize) cpu_kernel_set_group_size;
__typeof__(zeKernelSuggestGroupSize) cpu_kernel_suggest_group_size;
__typeof__(zeKernelSuggestMaxCooperativeGroupCount) cpu_kernel_suggest_max_cooperative_group_count;
__typeof__(zeKernelSetArgumentValue) cpu_kernel_set_argument_value;
__typeof__(zeKernelSetIndirectAccess) cpu_kernel_set_indirect_access;
__typeof__(zeKernelGetIndirectAccess) cpu_kernel_get_indirect_access;
__typeof__(zeKernelGetSourceAttributes) cpu_kernel_get_source_attributes;
__typeof__(zeKernelGetProperties) cpu_kernel_get_properties;
__typeof__(zeKernelGetName) cpu_kernel_get_name;

#endif /* KAPI_CPU_API_H */
